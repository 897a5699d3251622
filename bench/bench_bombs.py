# SPDX-License-Identifier: GPL-3.0-or-later
"""Throw hostile requests at a production-like deployment and watch it keep answering.

    .venv/bin/python bench/bench_bombs.py [--items 100000] [--redis-url redis://127.0.0.1:6379/0]

It creates a scratch PostgreSQL database (``fb_bombs_<pid>`` on the server that
``--database-url`` or ``DATABASE_URL`` points at), migrates it, and starts what
a department would run: gunicorn (2 workers x 4 threads) and a Celery worker on
Redis, with ``FUNNYBONE_PRODUCTION=1``. A researcher account then sends, one
after another, the requests a hostile co-tenant could send:

- an XLSX whose shared strings inflate to ~100 MB from a few hundred KB;
- an XLSX with a billion-laughs DTD, and one with an external entity;
- a CSV with an unterminated quote, a JSONL line nested 100,000 deep;
- a study whose configuration is nested 100,000 deep, and a 5,000-digit quota;
- a prompt template ``{{ "a"|ljust:"1000000000" }}`` and ``{% include "/etc/passwd" %}``;
- the progress API and the study-file download of a study of ``--items`` items;
- a JSON list of ``--json-items`` items through the API, and a protocol (JEST)
  import of a ~24 MB ratings CSV through the page.

While each request runs, a probe thread fetches the login page every 0.2 s:
the figure that matters is the slowest probe answer during the bomb (the web
server must keep answering other requests within 2 s). Background work is
followed until its job ends (bounded). At the end it prints, per bomb, the
HTTP status and a short excerpt of the answer, the request's own time, the
slowest probe, and the peak resident memory (RSS, sampled every 0.2 s from
/proc) of the web workers and of the Celery worker's processes.

The reference in the same run is the probe's latency with no bomb in flight
(the "idle" row). Traffic goes to loopback only; every loop is bounded.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load_server import create_database, drop_database, gunicorn  # noqa: E402

DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432/postgres"
PROBE_EVERY = 0.2


# --- hostile files ------------------------------------------------------------------------------


def _xlsx(sheet_xml: str, shared_xml: str | None = None, *, level: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A minimal workbook; the parts are written as given, hostile or not."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", level) as zf:
        overrides = (
            '<Override PartName="/xl/workbook.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        )
        if shared_xml is not None:
            overrides += (
                '<Override PartName="/xl/sharedStrings.xml" '
                'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
            )
        zf.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>' + overrides + "</Types>",
        )
        zf.writestr(
            "_rels/.rels",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'officeDocument" Target="xl/workbook.xml"/></Relationships>',
        )
        zf.writestr(
            "xl/workbook.xml",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
            'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships">'
            '<sheets><sheet name="items" sheetId="1" r:id="rId1"/></sheets></workbook>',
        )
        rels = (
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'worksheet" Target="worksheets/sheet1.xml"/>'
        )
        if shared_xml is not None:
            rels += (
                '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
                'sharedStrings" Target="sharedStrings.xml"/>'
            )
        zf.writestr(
            "xl/_rels/workbook.xml.rels",
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            + rels
            + "</Relationships>",
        )
        zf.writestr("xl/worksheets/sheet1.xml", sheet_xml)
        if shared_xml is not None:
            zf.writestr("xl/sharedStrings.xml", shared_xml)
    return buffer.getvalue()


_SHEET_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
)


def shared_strings_bomb(inflated_mb: int = 100) -> bytes:
    """Two columns, id and text, where one shared string is ``inflated_mb`` MB of one letter."""
    text = "x" * (inflated_mb * 1024 * 1024)
    shared = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="3" uniqueCount="3">'
        f"<si><t>id</t></si><si><t>text</t></si><si><t>{text}</t></si></sst>"
    )
    sheet = (
        _SHEET_HEAD + '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>'
        '<row r="2"><c r="A2" t="inlineStr"><is><t>j1</t></is></c><c r="B2" t="s"><v>2</v></c></row>'
        "</sheetData></worksheet>"
    )
    return _xlsx(sheet, shared)


def billion_laughs_xlsx() -> bytes:
    entities = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 10)
    )
    sheet = (
        f'<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE worksheet [{entities}]>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>id</t></is></c><c r="B1" t="inlineStr"><is><t>text</t></is></c></row>'
        '<row r="2"><c r="A2" t="inlineStr"><is><t>j1</t></is></c>'
        '<c r="B2" t="inlineStr"><is><t>&lol9;</t></is></c></row></sheetData></worksheet>'
    )
    return _xlsx(sheet)


def external_entity_xlsx() -> bytes:
    sheet = (
        '<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE worksheet [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>id</t></is></c><c r="B1" t="inlineStr"><is><t>text</t></is></c></row>'
        '<row r="2"><c r="A2" t="inlineStr"><is><t>j1</t></is></c>'
        '<c r="B2" t="inlineStr"><is><t>&xxe;</t></is></c></row></sheetData></worksheet>'
    )
    return _xlsx(sheet)


def deep_json(depth: int = 100_000) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def jest_ratings_csv(target_mb: int = 24) -> bytes:
    """A long JEST panel sheet (item,rater,rating) of about ``target_mb`` MB: valid, just big."""
    lines = ["id,setup,response,rater,rating"]
    size, i = 0, 0
    while size < target_mb * 1024 * 1024:
        setup = f"Setup sentence number {i} about a cat who walks into a bar."
        response = f"Response number {i}: the bartender says we do not serve cats here."
        for rater in range(7):
            line = f"t{i},{setup},{response},Rater {rater},{(i + rater) % 4}"
            lines.append(line)
            size += len(line) + 1
        i += 1
    return ("\n".join(lines) + "\n").encode()


# --- measuring --------------------------------------------------------------------------------


def _descendants(root_pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, stack = [], [root_pid]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _rss_mb(pid: int) -> float:
    with contextlib.suppress(OSError):
        for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class Watch:
    """Probe latency and per-process peak RSS, sampled in a background thread."""

    base_url: str
    web_root: int
    worker_root: int
    probe_times: list[tuple[float, float]] = field(default_factory=list)
    peak_web: float = 0.0
    peak_worker: float = 0.0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        import httpx2 as httpx

        with httpx.Client(base_url=self.base_url, timeout=30) as client:
            while not self.stop.is_set():
                started = time.monotonic()
                try:
                    client.get("/accounts/login/")
                    elapsed = time.monotonic() - started
                except httpx.HTTPError:
                    elapsed = float("inf")
                self.probe_times.append((started, elapsed))
                # The master is not counted: workers are where requests run.
                web = [p for p in _descendants(self.web_root) if p != self.web_root]
                self.peak_web = max([self.peak_web, *(_rss_mb(p) for p in web)])
                self.peak_worker = max([self.peak_worker, *(_rss_mb(p) for p in _descendants(self.worker_root))])
                time.sleep(max(0.0, PROBE_EVERY - (time.monotonic() - started)))

    def slowest_between(self, start: float, end: float) -> float:
        # Every probe that was in flight at some moment of the window counts.
        times = [elapsed for started, elapsed in self.probe_times if started <= end and started + elapsed >= start]
        return max(times, default=0.0)

    def reset_peaks(self) -> None:
        self.peak_web = self.peak_worker = 0.0


@dataclass
class Outcome:
    name: str
    status: str
    seconds: float
    probe_max: float
    web_mb: float
    worker_mb: float
    said: str


def _excerpt(text: str, limit: int = 90) -> str:
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text[:limit]


# --- the run ------------------------------------------------------------------------------------


def _setup_django(database_url: str, env: dict[str, str]) -> None:
    os.environ.update(env)
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()


def _researcher_token() -> str:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user = get_user_model().objects.create_user("bomb-bench", "bench@example.org", "bomb-bench-password-1")
    return Token.objects.create(user=user).key


def _big_study(n_items: int) -> int:
    """An open ordinal study of ``n_items`` items, written with bulk inserts (the setup, not the bomb)."""
    from django.contrib.auth import get_user_model

    from annotation.models import Item
    from annotation.services.studies import study_create, study_set_state

    owner = get_user_model().objects.get(username="bomb-bench")
    study = study_create(owner=owner, name=f"Big study {n_items}", task_type="ordinal")
    batch = 20_000
    for start in range(0, n_items, batch):
        Item.objects.bulk_create(
            Item(study=study, external_id=f"j{i}", position=i, prompt=f"Setup {i}", text=f"Punchline {i}")
            for i in range(start, min(n_items, start + batch))
        )
    study_set_state(study=study, state="open")
    return study.pk


def _study(token_client, name: str, task_type: str = "ordinal") -> int:
    answer = token_client.post("/api/studies/create/", json={"name": name, "task_type": task_type})
    answer.raise_for_status()
    return answer.json()["id"]


def _follow_job(client, study_pk: int, answer, *, job_wait: float) -> tuple[str, str]:
    """If the answer handed the work to the worker, poll its status until it ends (bounded)."""
    try:
        body = answer.json()
    except ValueError:
        return str(answer.status_code), _excerpt(answer.text)
    status = body.get("status") if isinstance(body, dict) else None
    job_id = (body.get("import_id") or body.get("id")) if isinstance(body, dict) else None
    if status not in {"queued", "running"} or job_id is None:
        return str(answer.status_code), _excerpt(json.dumps(body, ensure_ascii=False))
    deadline = time.monotonic() + job_wait
    while time.monotonic() < deadline:
        time.sleep(1)
        polled = client.get(f"/api/studies/{study_pk}/imports/{job_id}/")
        body = polled.json()
        if body.get("status") not in {"queued", "running"}:
            return f"{answer.status_code}→{body.get('status')}", _excerpt(json.dumps(body, ensure_ascii=False))
    return f"{answer.status_code}→still running", f"job {job_id} unfinished after {job_wait:.0f} s"


def run(args: argparse.Namespace) -> list[Outcome]:
    import httpx2 as httpx  # the HTTP client the OpenAI SDK brings

    name = f"fb_bombs_{os.getpid()}"
    database_url = create_database(args.database_url, name)
    data_dir = Path(f"/tmp/{name}")
    env = {
        "FUNNYBONE_PRODUCTION": "1",
        "SECRET_KEY": "bomb-bench-" + os.urandom(16).hex(),
        "REDIS_URL": args.redis_url,
        "FUNNYBONE_DATA_DIR": str(data_dir),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "LOG_LEVEL": "WARNING",
    }
    outcomes: list[Outcome] = []
    worker = None
    try:
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
            cwd=ROOT,
            env={**os.environ, **env, "DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "funnybone.settings"},
            check=True,
        )
        _setup_django(database_url, env)
        token = _researcher_token()
        started = time.monotonic()
        big_pk = _big_study(args.items)
        print(f"setup: {args.items:,} items written in {time.monotonic() - started:.1f} s", flush=True)
        worker_log = data_dir / "worker.log"
        worker_log.parent.mkdir(parents=True, exist_ok=True)
        with worker_log.open("wb") as log_file:
            worker = subprocess.Popen(
                [str(Path(sys.executable).with_name("celery")), "-A", "funnybone", "worker", "--concurrency=1"],
                cwd=ROOT,
                env={**os.environ, **env, "DATABASE_URL": database_url},
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        with gunicorn(database_url, log=data_dir / "web.log", workers=2, threads=4, extra_env=env) as server:
            watch = Watch(base_url=server.url, web_root=server.process.pid, worker_root=worker.pid)
            threading.Thread(target=watch.run, daemon=True).start()
            headers = {"Authorization": f"Token {token}"}
            with httpx.Client(base_url=server.url, headers=headers, timeout=600) as api:

                def measure(label: str, send) -> None:
                    watch.reset_peaks()
                    time.sleep(2 * PROBE_EVERY)
                    begin = time.monotonic()
                    try:
                        status, said = send()
                    except httpx.HTTPError as exc:
                        status, said = "no answer", f"{type(exc).__name__}: {exc}"[:90]
                    end = time.monotonic()
                    time.sleep(2 * PROBE_EVERY)
                    outcome = Outcome(
                        label,
                        status,
                        end - begin,
                        watch.slowest_between(begin, end + PROBE_EVERY),
                        watch.peak_web,
                        watch.peak_worker,
                        said,
                    )
                    outcomes.append(outcome)
                    print(
                        f"{label:<34} {status:<14} {outcome.seconds:7.1f} s  probe≤{outcome.probe_max:5.2f} s  "
                        f"web {outcome.web_mb:6.0f} MB  worker {outcome.worker_mb:6.0f} MB  {said}",
                        flush=True,
                    )

                def idle():
                    time.sleep(3)
                    return "-", "no request (reference)"

                def upload(filename: str, payload: bytes):
                    def send():
                        pk = _study(api, f"Bomb {filename} {time.time()}")
                        answer = api.post(f"/api/studies/{pk}/items/import/", files={"file": (filename, payload)})
                        return _follow_job(api, pk, answer, job_wait=args.job_wait)

                    return send

                def post_json(path: str, body: str):
                    def send():
                        answer = api.post(path, content=body.encode(), headers={"Content-Type": "application/json"})
                        return str(answer.status_code), _excerpt(answer.text)

                    return send

                def logged_in():
                    """A browser-like session: the researcher pages take a login, not a token."""
                    web = httpx.Client(base_url=server.url, timeout=600, follow_redirects=False)
                    login = web.get("/accounts/login/")
                    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
                    web.post(
                        "/accounts/login/",
                        data={
                            "username": "bomb-bench",
                            "password": "bomb-bench-password-1",
                            "csrfmiddlewaretoken": csrf,
                        },
                        headers={"Referer": f"{server.url}/accounts/login/"},
                    )
                    return web

                def get(path: str, *, session: bool = False):
                    def send():
                        size = 0
                        client = logged_in() if session else api
                        try:
                            with client.stream("GET", path) as answer:
                                for chunk in answer.iter_bytes():
                                    size += len(chunk)
                                return str(answer.status_code), f"{size / 1e6:.1f} MB received"
                        finally:
                            if session:
                                client.close()

                    return send

                def template(text: str):
                    body = {"name": f"bomb-{os.urandom(4).hex()}", "task_type": "ordinal", "user_text": text}
                    return post_json("/api/judging/templates/", json.dumps(body))

                def protocol_import():
                    from django.contrib.auth import get_user_model

                    from annotation.protocols.base import study_from_template

                    owner = get_user_model().objects.get(username="bomb-bench")
                    study = study_from_template(template="jest", name=f"JEST bomb {time.time()}", owner=owner)
                    payload = jest_ratings_csv(args.protocol_mb)
                    web = logged_in()
                    try:
                        page = web.get(f"/studies/{study.pk}/protocol-import/")
                        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
                        answer = web.post(
                            f"/studies/{study.pk}/protocol-import/",
                            data={"csrfmiddlewaretoken": csrf},
                            files={"file": ("panel.csv", payload)},
                            headers={"Referer": f"{server.url}/studies/{study.pk}/protocol-import/"},
                        )
                        said = f"{len(payload) / 1e6:.0f} MB sent; " + _excerpt(answer.text)
                        # Big files go to the worker: follow the import record until it ends (bounded).
                        from annotation.models import ItemImport

                        deadline = time.monotonic() + args.job_wait
                        job = ItemImport.objects.filter(study=study).order_by("-pk").first()
                        while job is not None and job.status in {"queued", "running"}:
                            if time.monotonic() > deadline:
                                return f"{answer.status_code}→still running", said
                            time.sleep(1)
                            job.refresh_from_db()
                        if job is not None:
                            outcome = f"{job.status}: {job.items_created} items, {job.judgments_created} answers"
                            return f"{answer.status_code}→{job.status}", f"{len(payload) / 1e6:.0f} MB sent; {outcome}"
                        return str(answer.status_code), said
                    finally:
                        web.close()

                measure("idle (reference)", idle)
                measure("XLSX shared strings 100 MB", upload("bomb.xlsx", shared_strings_bomb(args.inflate_mb)))
                measure("XLSX billion laughs", upload("laughs.xlsx", billion_laughs_xlsx()))
                measure("XLSX external entity", upload("xxe.xlsx", external_entity_xlsx()))
                measure("CSV unterminated quote", upload("quote.csv", b'id,text\nj1,"never closed\nj2,fine\n'))
                measure("JSONL nested 100,000 deep", upload("deep.jsonl", (deep_json() + "\n").encode()))
                measure(
                    "study config nested 100,000 deep",
                    post_json(
                        "/api/studies/create/",
                        '{"name": "deep", "task_type": "ordinal", "config": ' + deep_json() + "}",
                    ),
                )
                measure(
                    "5,000-digit quota",
                    post_json(
                        "/api/studies/create/",
                        '{"name": "digits", "task_type": "ordinal", "quota_per_item": ' + "9" * 5000 + "}",
                    ),
                )
                measure("template ljust 1e9", template('{{ "a"|ljust:"1000000000" }}'))
                measure("template include /etc/passwd", template('{% include "/etc/passwd" %}'))
                measure(f"progress API, {args.items:,} items", get(f"/api/studies/{big_pk}/progress/"))
                measure(f"study file, {args.items:,} items", get(f"/studies/{big_pk}/study-file/", session=True))

                def items_json():
                    pk = _study(api, f"JSON list {time.time()}")
                    items = [
                        {"id": f"j{i}", "text": f"Joke number {i} walks into a bar."} for i in range(args.json_items)
                    ]
                    answer = api.post(f"/api/studies/{pk}/items/import/", json={"items": items})
                    return _follow_job(api, pk, answer, job_wait=args.job_wait)

                measure(f"JSON list of {args.json_items:,} items (API)", items_json)
                measure(f"protocol import {args.protocol_mb} MB CSV", protocol_import)
            watch.stop.set()
    finally:
        if worker is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, 15)
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(timeout=20)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker.pid, 9)
        from django.db import connections

        connections.close_all()
        drop_database(args.database_url, name)
    return outcomes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_SERVER))
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--items", type=int, default=100_000, help="items in the big study (progress, study file)")
    parser.add_argument("--inflate-mb", type=int, default=100, help="size of the shared-strings bomb once inflated")
    parser.add_argument("--job-wait", type=float, default=300.0, help="seconds to follow a background job")
    parser.add_argument("--json-items", type=int, default=100_000, help="items in the API's JSON list")
    parser.add_argument("--protocol-mb", type=int, default=24, help="size of the JEST ratings CSV")
    args = parser.parse_args()
    print(
        f"bench_bombs: gunicorn 2x4 gthread + 1 Celery worker, PostgreSQL, Redis, FUNNYBONE_PRODUCTION=1; "
        f"big study {args.items:,} items; probe every {PROBE_EVERY} s",
        flush=True,
    )
    outcomes = run(args)
    worst = max((o.probe_max for o in outcomes if o.name != "idle (reference)"), default=0.0)
    idle = next((o.probe_max for o in outcomes if o.name == "idle (reference)"), 0.0)
    print(
        f"\nslowest probe answer during any bomb: {worst:.2f} s (idle reference {idle:.2f} s; target ≤ 2 s); "
        f"peak RSS web {max(o.web_mb for o in outcomes):.0f} MB, worker {max(o.worker_mb for o in outcomes):.0f} MB"
    )


if __name__ == "__main__":
    main()
