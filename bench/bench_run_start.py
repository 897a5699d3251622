# SPDX-License-Identifier: GPL-3.0-or-later
"""Starting a judge run over every item, and "Retry failed" on a finished run, on a big study.

    DATABASE_URL=postgres://…/scratch .venv/bin/python bench/bench_run_start.py --study N [--api]

``N`` is a study built by ``bench/bench_pages.py --items …`` (the 1M-item study of
docs/load.md): its first LLM judge has a judge config and a run over every item.
Each request is made in its own child process through Django's test client
(full middleware, the owner logged in), which reports the request's seconds and
the child's peak resident memory (``VmHWM``, as ``bench/bench_export.py``);
beside them the same for a bare view (``bench/bench_pages.py``'s: login, one
query), whose peak is the floor of every child.

* ``start``       the runs page's POST (``/judging/studies/N/runs/``) for that judge:
                  a run over every item of the study;
* ``retry``       the "Retry failed" POST (``/judging/runs/R/retry-failed/``) on a
                  finished run over every item made here in SQL from the judge's
                  run: its done units kept, every other unit failed (an endpoint
                  that went down), so the retry asks again for all of those;
* ``start_api``, ``retry_api`` (with ``--api``) the same through ``/api/v1/``.

``peak MB`` is the child's peak up to the end of the request. A run too big to
make in a request (``judging.services.runs.PREPARE_IN_WORKER_ABOVE``) answers
at once with a run that is ``preparing``; the child then does what the worker
does first, makes its units (``worker s``), so the count of units made is real.

No worker runs: the task a new run queues is replaced by a no-op in the
children. Every run a request made is deleted after it is measured, and the
finished run at the end, so the bench can be run again on the same study.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_export import _own_peak_mb  # noqa: E402
from bench.bench_pages import _django, _urls  # noqa: E402

PAGE_PHASES = ("bare", "start", "retry")
API_PHASES = ("start_api", "retry_api")


def _client(owner):
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    client = Client()
    client.force_login(owner)
    return client


def run_phase(phase: str, study_id: int, judge_id: int, finished_id: int) -> dict:
    """One request in this process: its seconds, its status and what it made."""
    from django.test.utils import override_settings

    from annotation.models import Study
    from judging import tasks
    from judging.models import JudgeRun

    tasks.judge_run_task.delay = lambda *args, **kwargs: None  # no worker here
    study = Study.objects.get(pk=study_id)
    _urls()
    with override_settings(ROOT_URLCONF="bench.bench_pages", ALLOWED_HOSTS=["testserver"], DEBUG=False):
        client = _client(study.owner)
        bare = [_seconds(lambda: client.get(f"/bare/{study.pk}/"))[0] for _ in range(5)]
        if phase == "bare":
            return {"seconds": statistics.median(bare), "status": 200, "units": 0, "peak_mb": _own_peak_mb()}
        last = JudgeRun.objects.order_by("-pk").values_list("pk", flat=True).first()
        requests = {
            "start": lambda: client.post(f"/judging/studies/{study.pk}/runs/", {"judge": judge_id}),
            "retry": lambda: client.post(f"/judging/runs/{finished_id}/retry-failed/"),
            "start_api": lambda: client.post(
                "/api/v1/runs/", {"study": study.pk, "judge": judge_id}, content_type="application/json"
            ),
            "retry_api": lambda: client.post(f"/api/v1/runs/{finished_id}/retry-failed/"),
        }
        seconds, response = _seconds(requests[phase])
    peak_mb = _own_peak_mb()  # the request's: before the worker's part below
    made = JudgeRun.objects.filter(pk__gt=last or 0).first()
    worker = None
    if made is not None and made.preparing:  # what the worker then does before it asks anything
        from judging.services.runs import _prepare_units

        started = time.perf_counter()
        _prepare_units(made.pk)
        worker = time.perf_counter() - started
    return {
        "seconds": seconds,
        "status": response.status_code,
        "units": made.units.count() if made else 0,
        "run": made.pk if made else None,
        "peak_mb": peak_mb,
        "worker": worker,
    }


def _seconds(request) -> tuple[float, object]:
    start = time.perf_counter()
    response = request()
    return time.perf_counter() - start, response


def measure(phase: str, study_id: int, judge_id: int, finished_id: int) -> dict:
    command = [sys.executable, __file__, "--phase", phase, "--study", str(study_id)]
    command += ["--judge", str(judge_id), "--finished", str(finished_id)]
    output = subprocess.run(command, stdout=subprocess.PIPE, text=True, env=os.environ.copy(), check=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def finished_run(study_id: int) -> tuple[int, int]:
    """(judge config, a finished run over every item whose undone units failed), made in SQL from the judge's run."""
    from django.db import connection
    from django.utils import timezone

    from judging.models import JudgeRun

    source = JudgeRun.objects.filter(study_id=study_id, retry_of=None).order_by("pk").first()
    if source is None:
        raise SystemExit(f"study {study_id} has no judge run: build it with bench/bench_pages.py --items …")
    now = timezone.now()
    run = JudgeRun.objects.create(
        study_id=study_id, judge=source.judge, created_by=source.created_by, status="done", started_at=now,
        finished_at=now,
    )  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO judging_judgeunit (run_id, item_id, trial, swapped, status, attempts, claimed_by, "
            "claimed_until, finished_at, assignment_id, outcome, reason, error, prompt_tokens, completion_tokens, "
            "answer_excerpt) "
            "SELECT %s, item_id, trial, swapped, CASE WHEN status = 'done' THEN 'done' ELSE 'failed' END, "
            "greatest(attempts, 1), '', NULL, %s, assignment_id, "
            "CASE WHEN status = 'done' THEN outcome ELSE 'failed' END, "
            "CASE WHEN status = 'done' THEN '' ELSE 'connection refused' END, "
            "CASE WHEN status = 'done' THEN '' ELSE 'bench: connection refused (gave up after 4 tries)' END, "
            "prompt_tokens, completion_tokens, answer_excerpt FROM judging_judgeunit WHERE run_id = %s ORDER BY id",
            [run.pk, now, source.pk],
        )
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE judging_judgeunit")
    return source.judge_id, run.pk


def drop_runs(*run_ids: int) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for run_id in run_ids:
            cursor.execute("UPDATE judging_judgerun SET retry_of_id = NULL WHERE retry_of_id = %s", [run_id])
            cursor.execute("DELETE FROM judging_judgeunit WHERE run_id = %s", [run_id])
            cursor.execute("DELETE FROM judging_judgerun WHERE id = %s", [run_id])


def _worker(result: dict) -> str:
    return "–" if result.get("worker") is None else f"{result['worker']:8.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--study", type=int, required=True, help="a study built by bench/bench_pages.py --items")
    parser.add_argument("--api", action="store_true", help="also the API's POSTs")
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--judge", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--finished", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    _django()

    if args.phase:  # a child: one request, one JSON line
        print(json.dumps(run_phase(args.phase, args.study, args.judge, args.finished)))
        return 0

    from django.conf import settings

    from annotation.models import Item

    n_items = Item.objects.filter(study_id=args.study).count()
    started = time.perf_counter()
    judge_id, finished_id = finished_run(args.study)
    print(
        f"study {args.study}: {n_items:,} items, database {settings.DATABASES['default']['NAME']}; "
        f"finished run {finished_id} made in {time.perf_counter() - started:.0f} s; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'request':>10} {'seconds':>9} {'peak MB':>8} {'status':>6} {'units made':>11}  ≤ 2 s  {'worker s':>8}")
    try:
        for phase in PAGE_PHASES + (API_PHASES if args.api else ()):
            result = measure(phase, args.study, judge_id, finished_id)
            if result.get("run"):
                drop_runs(result["run"])
            ok = "yes" if result["seconds"] <= 2 else "NO"
            print(
                f"{phase:>10} {result['seconds']:9.3f} {result['peak_mb']:8.0f} {result['status']:>6} "
                f"{result['units']:>11,}  {ok:<5}  {_worker(result)}",
                flush=True,
            )
    finally:
        drop_runs(finished_id)
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
