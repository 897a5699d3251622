# SPDX-License-Identifier: GPL-3.0-or-later
"""Time and peak memory of the responses that grow with a study: study file and progress.

    .venv/bin/python bench/bench_bounded.py [--sizes 100000,1000000] [--phases ...] [--cap 900]

For every size N it builds one pairwise study with N items (two candidates
each, a little metadata) and one human judgment on every tenth item, straight
into the database (``bulk_create``, no services). The database is the one
``DATABASE_URL`` names (a scratch database: the bench migrates it and adds
studies), or by default a temporary SQLite file that is deleted afterwards.

Each phase runs in its own child process, which reports its own peak resident
memory (``VmHWM``, ``bench/peaks.py``):

* ``idle``          Django set up and nothing else: the floor under every figure;
* ``file_stream``   the study-file download as served now: YAML chunks from
                    ``study_file_yaml_chunks``, written to a file as they come;
* ``file_json``     the same as JSON (``?format=json``);
* ``file_whole``    the former way: the whole study as one dict dumped to one
                    string (with the same YAML emitter, so only memory differs);
* ``progress``      the progress page's query: totals in the database, one page
                    of 200 items and 200 raters;
* ``progress_api``  the progress API's default page (500 rows) serialised to JSON.

A phase that runs past ``--cap`` seconds is stopped and printed as skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.peaks import own_peak_mb, phase_figures  # noqa: E402

PHASES = ("idle", "file_stream", "file_json", "file_whole", "progress", "progress_api")
BATCH = 10_000


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()


def build(n_items: int) -> int:
    """Create the study, its items, candidates and a few judgments; return the study id."""
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    from annotation.models import Assignment, Candidate, Enrollment, Item, Judgment, Rater, Study
    from annotation.services.places import places_add

    owner, _ = get_user_model().objects.get_or_create(username="bench-bounded")
    stamp = f"{n_items}-{int(time.time())}"
    study = Study.objects.create(
        owner=owner,
        name=f"Bounded bench {stamp}",
        slug=f"bounded-bench-{stamp}",
        task_type="pairwise",
        config={"allow_tie": True},
        quota_per_item=3,
        state=Study.State.OPEN,
    )
    rater = Rater.objects.create(kind=Rater.Kind.CROWD, external_id=f"bench-{stamp}")
    Enrollment.objects.create(study=study, rater=rater)
    now = timezone.now()
    for start in range(0, n_items, BATCH):
        with transaction.atomic():
            items = Item.objects.bulk_create(
                Item(
                    study=study,
                    external_id=f"pair-{i}",
                    position=i,
                    prompt=f"Prompt number {i}: a cat walks into a bar.",
                    metadata={"source": "bench", "n": i},
                )
                for i in range(start, min(n_items, start + BATCH))
            )
            if not all(item.pk for item in items):  # backends without RETURNING
                items = list(Item.objects.filter(study=study, position__gte=start).order_by("position")[:BATCH])
            Candidate.objects.bulk_create(
                Candidate(item=item, key=key, position=p, text=f"Punchline {key} of {item.external_id}.")
                for item in items
                for p, key in enumerate(("a", "b"))
            )
            judged = [item for item in items if item.position % 10 == 0]
            assignments = Assignment.objects.bulk_create(
                Assignment(
                    study=study,
                    item=item,
                    rater=rater,
                    state="done",
                    shown_order=["a", "b"],
                    leased_at=now,
                    lease_expires_at=now,
                )
                for item in judged
            )
            if not all(a.pk for a in assignments):
                assignments = list(Assignment.objects.filter(item__in=judged, rater=rater))
            places_add(assignments)  # the places these done answers take, as the service counts them
            Judgment.objects.bulk_create(
                Judgment(
                    assignment=a,
                    study=study,
                    item_id=a.item_id,
                    rater=rater,
                    value={"choice": "a"},
                    shown_order=["a", "b"],
                )
                for a in assignments
            )
    return study.pk


def run_phase(phase: str, study_id: int, out_dir: str) -> dict:
    from annotation.models import Study

    study = Study.objects.get(pk=study_id)
    target = Path(out_dir) / f"{phase}-{study_id}.out"
    started = time.perf_counter()
    size = 0
    if phase in ("file_stream", "file_json"):
        from annotation.study_files import study_file_json_chunks, study_file_yaml_chunks

        chunks = study_file_yaml_chunks if phase == "file_stream" else study_file_json_chunks
        with open(target, "w", encoding="utf-8") as out:
            for chunk in chunks(study):
                out.write(chunk)
        size = target.stat().st_size
    elif phase == "file_whole":
        import yaml

        from annotation.study_files import YAML_DUMPER, study_file_data

        text = yaml.dump(study_file_data(study), Dumper=YAML_DUMPER, allow_unicode=True, sort_keys=False, width=1000)
        size = len(text.encode())
    elif phase == "progress":
        from annotation.selectors.researcher import study_progress

        progress = study_progress(study=study, item_limit=200, rater_limit=200)
        size = len(progress.items)
    elif phase == "progress_api":
        from annotation.api.serializers import PROGRESS_PAGE, ProgressOutput
        from annotation.selectors.researcher import study_progress

        progress = study_progress(study=study, item_limit=PROGRESS_PAGE, rater_limit=PROGRESS_PAGE)
        size = len(json.dumps(dict(ProgressOutput(progress).data), default=str).encode())
    return {"seconds": time.perf_counter() - started, "bytes": size}


def measure(phase: str, study_id: int, out_dir: str, cap: float) -> dict:
    """Run one phase in a child process, which reports its own peak RSS (``bench.peaks``)."""
    command = [sys.executable, __file__, "--phase", phase, "--study", str(study_id), "--out", out_dir]
    return phase_figures(command, cap)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000", help="comma-separated item counts")
    parser.add_argument("--cap", type=float, default=900.0, help="seconds before a phase is stopped")
    parser.add_argument("--phases", default=",".join(PHASES))
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--study", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.phase:  # a child: one phase, one JSON line
        _django()
        print(json.dumps({**run_phase(args.phase, args.study, args.out), "peak_mb": own_peak_mb()}))
        return

    scratch = tempfile.mkdtemp(prefix="fb-bench-bounded-")
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{scratch}/bench.sqlite3"
    _django()
    from django.conf import settings
    from django.core.management import call_command

    engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    call_command("migrate", verbosity=0)
    phases = [p for p in args.phases.split(",") if p]
    print(f"database: {engine}; cap {args.cap:.0f}s")
    print(f"{'items':>9} {'phase':>13} {'seconds':>9} {'peak MB':>9} {'out MB':>9}")
    for size in (int(s) for s in args.sizes.split(",")):
        started = time.perf_counter()
        study_id = build(size)
        print(f"{size:>9} {'build':>13} {time.perf_counter() - started:>9.1f}")
        for phase in phases:
            result = measure(phase, study_id, scratch, args.cap)
            if "skipped" in result:
                print(f"{size:>9} {phase:>13} {'skipped ' + result['skipped']:>30}")
                continue
            print(
                f"{size:>9} {phase:>13} {result['seconds']:>9.1f} {result['peak_mb']:>9.0f} "
                f"{result['bytes'] / 2**20:>9.2f}"
            )
            sys.stdout.flush()
    for leftover in Path(scratch).iterdir():
        leftover.unlink()
    os.rmdir(scratch)
    if engine != "sqlite3":
        print("(the bench studies stay in the database)")


if __name__ == "__main__":
    main()
