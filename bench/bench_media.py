# SPDX-License-Identifier: GPL-3.0-or-later
"""Media bytes served per second through the production layout, beside nginx serving the same files itself.

    .venv/bin/python bench/bench_media.py [--files 20] [--kib 200] [--requests 2000] [--concurrency 8]

Builds a scratch database ``fb_media_bench_<pid>`` on the PostgreSQL server
``--database-url`` (or ``DATABASE_URL``) points at, an open study whose items
each carry one of ``--files`` pictures (noise PNGs of about ``--kib`` KiB,
checked and stored as an import stores them), and one crowd rater who holds
every item (a leased assignment each) with a session cookie. Then it starts,
on loopback ports from ``--port`` on:

* gunicorn (``FUNNYBONE_MEDIA_X_ACCEL=1``, as in production) behind nginx,
  whose internal location serves the stored files to X-Accel-Redirect answers
  (the production guide's config, plain HTTP here);
* the reference, in the same nginx: a plain location serving the same folder,
  no Django at all.

``--concurrency`` client threads with keep-alive connections fetch
``--requests`` files in all from each path, the rater's path first checked to
answer 200 with the file's bytes and the reference's the same bytes. It prints
requests and MiB per second of each and the production path as a share of the
reference. Nothing is asserted; the database and servers are removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import http.client
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load_server import create_database, drop_database, gunicorn, migrate  # noqa: E402

DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432/postgres"
NGINX_CONF = """
user {user};
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 512; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    sendfile on;
    types {{ image/png png; image/jpeg jpg; image/gif gif; image/webp webp; }}
    upstream app {{ server 127.0.0.1:{upstream}; keepalive 32; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host localhost;
        }}
        location /_protected_media/media/ {{
            internal;
            alias {media}/media/;
            add_header X-Content-Type-Options nosniff always;
            add_header Content-Security-Policy "default-src 'none'; sandbox" always;
        }}
        # The reference: the same files, served by nginx with no application in the way.
        location /direct/media/ {{
            alias {media}/media/;
            add_header X-Content-Type-Options nosniff always;
        }}
    }}
}}
"""


def _django(database_url: str, data_dir: Path) -> None:
    os.environ["DATABASE_URL"] = database_url
    os.environ["FUNNYBONE_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    os.environ.setdefault("SECRET_KEY", "media-bench-" + os.urandom(16).hex())
    import django

    django.setup()


def build(*, files: int, kib: int, items: int) -> tuple[list[tuple[str, str, int]], str]:
    """The study, its pictures and a rater holding every item: (media url, direct url, size) per file, and a cookie."""
    import io

    from django.contrib.auth import get_user_model
    from django.contrib.sessions.backends.db import SessionStore
    from django.utils import timezone
    from PIL import Image

    from annotation.media.checks import check_media
    from annotation.media.store import StoredFiles, media_store
    from annotation.models import Assignment, Enrollment, MediaAttachment, Rater
    from annotation.services.studies import ItemSpec, items_create, study_create, study_set_state
    from annotation.views.annotator import SESSION_KEY

    owner, _ = get_user_model().objects.get_or_create(username="media-bench")
    study = study_create(owner=owner, name="Media bench", task_type="ordinal")
    items_create(study=study, items=[ItemSpec(external_id=f"i{n}", text=f"Caption {n}") for n in range(items)])
    study_set_state(study=study, state="open")
    side = int((kib * 1024 / 3) ** 0.5)  # noise does not compress: about side² × 3 bytes of PNG
    stored = []
    for n in range(files):
        buffer = io.BytesIO()
        Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)).save(buffer, "PNG")
        checked = check_media(buffer.getvalue(), f"picture-{n}.png")
        stored.append(
            media_store(study=study, checked=checked, original_name=f"picture-{n}.png", written=StoredFiles())
        )
    item_ids = list(study.items.values_list("pk", flat=True))
    MediaAttachment.objects.bulk_create(
        MediaAttachment(media=stored[index % files], item_id=item_id, alt_text="noise")
        for index, item_id in enumerate(item_ids)
    )
    rater = Rater.objects.create(kind=Rater.Kind.CROWD, external_id=f"bench-{os.getpid()}")
    enrollment = Enrollment.objects.create(study=study, rater=rater, consented_at=timezone.now())
    now = timezone.now()
    Assignment.objects.bulk_create(
        Assignment(
            study=study,
            item_id=item_id,
            rater=rater,
            sequence=n,
            leased_at=now,
            lease_expires_at=now + timezone.timedelta(hours=2),
        )
        for n, item_id in enumerate(item_ids)
    )
    session = SessionStore()
    session[SESSION_KEY] = {str(study.pk): enrollment.pk}
    session.create()
    urls = [(f"/m/{media.public_id}", f"/direct/{media.file.name}", media.size_bytes) for media in stored]
    return urls, session.session_key


@contextlib.contextmanager
def nginx(*, port: int, upstream: int, media: Path, folder: Path):
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    folder.mkdir(parents=True, exist_ok=True)
    conf = folder / "nginx.conf"
    conf.write_text(NGINX_CONF.format(dir=folder, port=port, upstream=upstream, media=media, user=getpass.getuser()))
    process = subprocess.Popen(
        [binary, "-c", str(conf), "-p", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError):
                http.client.HTTPConnection("127.0.0.1", port, timeout=1).connect()
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"nginx did not start: {(folder / 'error.log').read_text(errors='replace')}")
            time.sleep(0.1)
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)


def fetch_all(port: int, paths: list[str], *, cookie: str, requests: int, concurrency: int) -> tuple[float, int]:
    """Fetch ``requests`` files over ``concurrency`` keep-alive connections; (seconds, bytes received)."""
    received = [0] * concurrency
    failures: list[str] = []
    share = requests // concurrency

    def client(number: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        headers = {"Cookie": f"sessionid={cookie}", "Host": "localhost"}
        for n in range(share):
            connection.request("GET", paths[(number * share + n) % len(paths)], headers=headers)
            response = connection.getresponse()
            body = response.read()
            if response.status != 200:
                failures.append(f"{response.status} {paths[n % len(paths)]}")
                return
            received[number] += len(body)
        connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    if failures:
        raise RuntimeError(f"{len(failures)} fetches failed, e.g. {failures[0]}")
    return seconds, sum(received)


def check_same_bytes(port: int, urls: list[tuple[str, str, int]], cookie: str) -> None:
    for served, direct, size in urls[:3]:
        bodies = []
        for path in (served, direct):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            connection.request("GET", path, headers={"Cookie": f"sessionid={cookie}", "Host": "localhost"})
            response = connection.getresponse()
            bodies.append((response.status, response.getheader("Content-Type"), response.read()))
        assert bodies[0][0] == 200 and bodies[0] == bodies[1] and len(bodies[0][2]) == size, (
            served,
            bodies[0][:2],
            bodies[1][:2],
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL") or DEFAULT_SERVER)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--kib", type=int, default=200, help="size of each picture")
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--requests", type=int, default=2000, help="fetches per path")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--port", type=int, default=21050, help="nginx's port; gunicorn takes the next one")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)

    scratch = f"fb_media_bench_{os.getpid()}"
    database_url = create_database(args.database_url, scratch)
    folder = Path(tempfile.mkdtemp(prefix="fb-media-bench-"))
    try:
        migrate(database_url)
        data_dir = folder / "data"
        _django(database_url, data_dir)
        urls, cookie = build(files=args.files, kib=args.kib, items=args.items)
        env = {"FUNNYBONE_DATA_DIR": str(data_dir), "FUNNYBONE_MEDIA_X_ACCEL": "1"}
        with (
            gunicorn(
                database_url, log=folder / "gunicorn.log", workers=args.workers, extra_env=env, port=args.port + 1
            ) as server,
            nginx(port=args.port, upstream=server.port, media=data_dir / "media", folder=folder / "nginx"),
        ):
            check_same_bytes(args.port, urls, cookie)
            results = {}
            for label, paths in (
                ("nginx direct (reference)", [direct for _, direct, _ in urls]),
                ("Django check + X-Accel", [served for served, _, _ in urls]),
            ):
                fetch_all(
                    args.port, paths, cookie=cookie, requests=min(200, args.requests), concurrency=args.concurrency
                )
                results[label] = fetch_all(
                    args.port, paths, cookie=cookie, requests=args.requests, concurrency=args.concurrency
                )
        mean_kib = sum(size for _, _, size in urls) / len(urls) / 1024
        print(
            f"{args.files} files of {mean_kib:.0f} KiB on average, {args.requests} fetches per path, C={args.concurrency}"
        )
        print(f"{'path':<28}{'req/s':>10}{'MiB/s':>10}")
        for label, (seconds, received) in results.items():
            print(f"{label:<28}{args.requests / seconds:>10.0f}{received / seconds / 2**20:>10.1f}")
        reference = results["nginx direct (reference)"]
        ours = results["Django check + X-Accel"]
        share = (ours[1] / ours[0]) / (reference[1] / reference[0])
        print(f"production layout: {100 * share:.1f}% of nginx's own bytes per second")
    finally:
        drop_database(args.database_url, scratch)
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
