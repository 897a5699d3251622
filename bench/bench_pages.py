# SPDX-License-Identifier: GPL-3.0-or-later
"""Response times of the researcher's pages on a big study, beside a bare Django view.

    DATABASE_URL=postgres://…/scratch .venv/bin/python bench/bench_pages.py [--judgments 1000000] [--raters 8] [--judges 2]
    DATABASE_URL=postgres://…/scratch .venv/bin/python bench/bench_pages.py --items 1000000 --judgments 1000000 \
        --raters 1000 --judges 2 --judge-items 25000 --study-file --worker-memory-mb 6000

Builds one ordinal (0–3) study straight into the database, in one of two shapes:

* by default (``bench/bench_export.build``) ``--raters`` crowd raters and
  ``--judges`` LLM judges each judge every item, so there are
  judgments / (raters + judges) items;
* with ``--items N`` (``bench/bench_export.build_sliced``, PostgreSQL, a
  minute for a million) a quota-1 crowd study of N items: each of ``--raters``
  people judged one slice of the items, ``--judges`` LLM judges each judged
  the first ``--judge-items`` items, the people's answers are the judgments
  left over and the items after them are still open; the first judge's run
  over every item is still running (its judged items done, the rest pending).

The database must be a scratch one: the bench migrates it and adds a study
(``--study ID`` reuses one it built before).

Every page that shows the study is requested in this process through
Django's test client (the full middleware stack, a logged-in owner; no
network, no web server), and printed beside a bare view on the same stack
that reads the study row and returns a few bytes — the floor any page stands
on. A streamed download (the study file, with ``--study-file``) is read to its
end; its first chunk is timed too. For the pages whose figures are stored
reports (analysis, alignment, judge comparison) three figures are printed:

* ``first``  the first visit: no stored figures, so the page queues the
             computation and says it is computing (no request computes a
             report here: ``FUNNYBONE_REPORT_INLINE_JUDGMENTS`` is 0);
* ``worker`` the computation the worker then does (the report's Celery task,
             run in this process, within ``--worker-memory-mb`` if given),
             off the request path;
* ``read``   the next visit, which reads the stored figures (median of ``--repeat``),
             or says the computation failed.

The target (issue 16) is every page ≤ 2 s; nothing here asserts it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_SECONDS = 2.0


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    os.environ["FUNNYBONE_REPORT_INLINE_JUDGMENTS"] = "0"
    import django

    django.setup()


# The bench's own URLs: the bare reference view beside the site's.
urlpatterns: list = []


def bare_view(request, pk: int):
    """The reference: the same middleware and login, one query, a few bytes back."""
    from django.http import HttpResponse

    from annotation.models import Study

    study = Study.objects.only("pk", "name").get(pk=pk, owner=request.user)
    return HttpResponse(f"<p>{study.pk}</p>")


def _urls() -> None:
    from django.contrib.auth.decorators import login_required
    from django.urls import include, path

    urlpatterns[:] = [path("bare/<int:pk>/", login_required(bare_view)), path("", include("funnybone.urls"))]


def timed(client, url: str, *, headers: dict | None = None) -> tuple[float, int, str]:
    """Seconds to the whole response (a streamed one read to its end), its status and (unless streamed) its body."""
    start = time.perf_counter()
    response = client.get(url, headers=headers or {})
    if response.streaming:
        size = sum(len(chunk) for chunk in response.streaming_content)
        body = f"{size / 2**20:.1f} MB streamed"
    else:
        body = response.content.decode(errors="replace")
    return time.perf_counter() - start, response.status_code, body


def first_chunk(client, url: str) -> float:
    """Seconds to a streamed response's first chunk: when the browser starts the download."""
    start = time.perf_counter()
    response = client.get(url)
    next(iter(response.streaming_content))
    elapsed = time.perf_counter() - start
    response.close()
    return elapsed


def run_reports(memory_mb: int | None = None) -> list[tuple[str, float]]:
    """What the worker does for every queued report, timed one by one (within ``memory_mb`` if given)."""
    from ratings.models import StudyReport
    from ratings.tasks import study_report_task

    if memory_mb:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 2**20, resource.RLIM_INFINITY))
    done = []
    for report in StudyReport.objects.filter(status="queued").order_by("pk"):
        start = time.perf_counter()
        study_report_task.apply(args=[report.pk])
        done.append((report.kind, time.perf_counter() - start))
    return done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgments", type=int, default=1_000_000)
    parser.add_argument("--raters", type=int, default=8)
    parser.add_argument("--judges", type=int, default=2)
    parser.add_argument(
        "--items",
        type=int,
        help="build a quota-1 crowd study of this many items instead: the raters take slices, one person per item",
    )
    parser.add_argument("--judge-items", type=int, default=50_000, help="with --items: the items each judge judged")
    parser.add_argument("--study", type=int, help="reuse a study this bench built before")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--study-file", action="store_true", help="also download the whole study file (YAML and JSON), once each"
    )
    parser.add_argument(
        "--worker-memory-mb",
        type=int,
        help="cap this process's address space before the worker computes the stored reports (a report that "
        "needs more fails, as it would in a worker with that memory)",
    )
    parser.add_argument(
        "--plain-only", action="store_true", help="only the pages that are not stored reports (no worker runs)"
    )
    args = parser.parse_args()

    _django()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import override_settings, setup_test_environment

    from annotation.models import Item, Judgment, Study
    from annotation.views.researcher import ITEMS_PER_PAGE, PROGRESS_ITEMS_SHOWN
    from judging.models import JudgeRun

    setup_test_environment()
    call_command("migrate", verbosity=0)
    from bench.bench_export import built_or_reused

    study_pk = built_or_reused(
        args.study, args.judgments, args.raters, args.judges, n_items=args.items, judge_items=args.judge_items
    )
    study = Study.objects.get(pk=study_pk)
    from ratings.models import StudyReport

    StudyReport.objects.filter(study=study).delete()  # every run starts with no stored figures
    n_items = Item.objects.filter(study=study).count()
    n_judgments = Judgment.objects.filter(study=study).count()
    owner = study.owner
    get_user_model().objects.filter(pk=owner.pk).update(is_staff=True)
    print(
        f"study {study.slug}: {n_items:,} items, {n_judgments:,} judgments, "
        f"database {connection.vendor} ({settings.DATABASES['default']['NAME']})"
    )

    _urls()
    with override_settings(ROOT_URLCONF=__name__, ALLOWED_HOSTS=["testserver"], DEBUG=False):
        client = Client()
        client.force_login(owner)
        bare = [timed(client, f"/bare/{study.pk}/")[0] for _ in range(max(5, args.repeat))]
        bare_s = statistics.median(bare)

        last_items = -(-n_items // ITEMS_PER_PAGE)
        last_progress = -(-n_items // PROGRESS_ITEMS_SHOWN)
        run = JudgeRun.objects.filter(study=study).order_by("pk").first()
        plain_pages = [
            ("study list", "/studies/"),
            ("study page", f"/studies/{study.pk}/"),
            ("items", f"/studies/{study.pk}/items/"),
            ("items, page 1000", f"/studies/{study.pk}/items/?page=1000"),
            (f"items, last page ({last_items})", f"/studies/{study.pk}/items/?page={last_items}"),
            ("item-file format", f"/studies/{study.pk}/items/format/"),
            ("protocol import", f"/studies/{study.pk}/protocol-import/"),
            ("progress", f"/studies/{study.pk}/progress/"),
            (f"progress, last item page ({last_progress})", f"/studies/{study.pk}/progress/?page={last_progress}"),
            ("progress, rater page 5", f"/studies/{study.pk}/progress/?raters_page=5"),
            ("exports", f"/exports/study/{study.slug}/"),
            ("judge runs", f"/judging/studies/{study.pk}/runs/"),
            ("new tournament", f"/judging/studies/{study.pk}/tournaments/new/"),
        ]
        if run is not None:
            last_units = -(-run.units.count() // 50)  # judging.views.UNITS_PER_PAGE
            plain_pages += [
                ("run page", f"/judging/runs/{run.pk}/"),
                ("run, unit page 1000", f"/judging/runs/{run.pk}/?page=1000"),
                (f"run, last unit page ({last_units})", f"/judging/runs/{run.pk}/?page={last_units}"),
                ("run, problems only", f"/judging/runs/{run.pk}/?show=problems"),
            ]
        if args.study_file:
            plain_pages += [
                ("study file (YAML), whole", f"/studies/{study.pk}/study-file/"),
                ("study file (JSON), whole", f"/studies/{study.pk}/study-file/?format=json"),
            ]
        report_pages = [
            ("analysis", f"/analysis/{study.slug}/"),
            ("alignment", f"/alignment/{study.slug}/"),
            ("judge comparison", f"/alignment/{study.slug}/judges/"),
        ]
        if args.plain_only:
            report_pages = []
        rows: list[tuple[str, str, str, str, str]] = []
        for name, url in plain_pages:
            times, status, body = [], 0, ""
            for _ in range(1 if "whole" in name else args.repeat):
                elapsed, status, body = timed(client, url)
                times.append(elapsed)
            note = f" {body}" if body.endswith("streamed") else ""
            rows.append((name, "", "", f"{statistics.median(times):.3f}", f"{status}{note}"))
        if args.study_file:
            times = [first_chunk(client, f"/studies/{study.pk}/study-file/") for _ in range(args.repeat)]
            rows.append(("study file (YAML), first chunk", "", "", f"{statistics.median(times):.3f}", "200"))
        for name, url in report_pages:
            first, status, body = timed(client, url)
            computing = "Computing" in body
            work = run_reports(args.worker_memory_mb)
            worker = sum(s for _kind, s in work)
            times = []
            for _ in range(args.repeat):
                elapsed, status, body = timed(client, url)
                times.append(elapsed)
            state = "up to date" if "up to date" in body else ("FAILED" if "computation failed" in body else "?")
            rows.append(
                (
                    name,
                    f"{first:.3f}{' (computing)' if computing else ''}",
                    f"{worker:.1f}" if work else "–",
                    f"{statistics.median(times):.3f}",
                    f"{status} {state}",
                )
            )
        # A poll of the analysis page once the figures are stored (what htmx sends every 2 s while computing).
        if report_pages:
            poll = [
                timed(client, f"/analysis/{study.slug}/?poll=1", headers={"HX-Request": "true"})[0] for _ in range(3)
            ]
            rows.append(("analysis poll (htmx)", "", "", f"{statistics.median(poll):.3f}", "200"))
        # The progress page's htmx poll (every 5 s while it is open) and a deep page of its item rows.
        polls = [
            ("progress poll (htmx)", f"/studies/{study.pk}/progress/", {"HX-Request": "true"}),
            ("progress, item page 100", f"/studies/{study.pk}/progress/?page=100", {}),
        ]
        if run is not None:
            polls.append(("run poll (htmx)", f"/judging/runs/{run.pk}/", {"HX-Request": "true"}))
        for name, url, headers in polls:
            times = [timed(client, url, headers=headers)[0] for _ in range(args.repeat)]
            rows.append((name, "", "", f"{statistics.median(times):.3f}", "200"))

    print(f"\nbare Django view (login, one query): {bare_s * 1000:.1f} ms median of {len(bare)}")
    header = ("page", "first visit s", "worker s", "read s", "status")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + "  read / bare   ≤ 2 s")
    for row in rows:
        read = float(row[3])
        line = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
        print(f"{line}  {read / bare_s:9.1f}×   {'yes' if read <= TARGET_SECONDS else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
