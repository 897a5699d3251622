# SPDX-License-Identifier: GPL-3.0-or-later
"""Response times of the researcher's pages on a big study, beside a bare Django view.

    DATABASE_URL=postgres://…/scratch .venv/bin/python bench/bench_pages.py [--judgments 1000000] [--raters 8] [--judges 2]

Builds one ordinal (0–3) study with ``--judgments`` judgments straight into the
database (``bench/bench_export.build``: ``--raters`` crowd raters and ``--judges``
LLM judges each judge every item, so there are judgments / (raters + judges)
items). The database must be a scratch one: the bench migrates it and adds a
study (``--study ID`` reuses one it built before).

Every page is requested in this process through Django's test client (the
full middleware stack, a logged-in owner; no network, no web server), and
printed beside a bare view on the same stack that reads the study row and
returns a few bytes — the floor any page stands on. For the pages whose
figures are stored reports (analysis, alignment, judge comparison) three
figures are printed:

* ``first``  the first visit: no stored figures, so the page queues the
             computation and says it is computing (no request computes a
             report here: ``FUNNYBONE_REPORT_INLINE_JUDGMENTS`` is 0);
* ``worker`` the computation the worker then does (the report's Celery task,
             run in this process), off the request path;
* ``read``   the next visit, which reads the stored figures (median of ``--repeat``).

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
    start = time.perf_counter()
    response = client.get(url, headers=headers or {})
    elapsed = time.perf_counter() - start
    body = response.content.decode(errors="replace") if not response.streaming else ""
    return elapsed, response.status_code, body


def run_reports() -> list[tuple[str, float]]:
    """What the worker does for every queued report, timed one by one."""
    from ratings.models import StudyReport
    from ratings.tasks import study_report_task

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
    parser.add_argument("--study", type=int, help="reuse a study this bench built before")
    parser.add_argument("--repeat", type=int, default=3)
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

    setup_test_environment()
    call_command("migrate", verbosity=0)
    from bench.bench_export import built_or_reused

    study_pk = built_or_reused(args.study, args.judgments, args.raters, args.judges)
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

        plain_pages = [
            ("study page", f"/studies/{study.pk}/"),
            ("items", f"/studies/{study.pk}/items/"),
            ("progress", f"/studies/{study.pk}/progress/"),
            ("exports", f"/exports/study/{study.slug}/"),
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
            times, status = [], 0
            for _ in range(args.repeat):
                elapsed, status, _body = timed(client, url)
                times.append(elapsed)
            rows.append((name, "", "", f"{statistics.median(times):.3f}", str(status)))
        for name, url in report_pages:
            first, status, body = timed(client, url)
            computing = "Computing" in body
            work = run_reports()
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
        for name, url, headers in (
            ("progress poll (htmx)", f"/studies/{study.pk}/progress/", {"HX-Request": "true"}),
            ("progress, item page 100", f"/studies/{study.pk}/progress/?page=100", {}),
        ):
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
