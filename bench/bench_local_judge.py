"""How many of the bundled local model's answers are read, per demo study, with the judge's defaults.

llama.cpp's server with SmolLM2-135M (``make local-judge``) judges the first ``--items`` items of
every text demo study (the picture studies need a vision model). Printed per study: units judged
(an answer read), unparseable (an answer that is not one), failed (no answer: timeouts, refusals),
and the wall time; the micro-edit study also prints the words written. The reference is the same
model on the same items: an unparseable answer means the schema sent did not hold the model to it.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<scratch> .venv/bin/python bench/bench_local_judge.py --items 8

The database is migrated and gets the demo studies.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
os.environ.setdefault("FUNNYBONE_OUTBOUND_ALLOW_NETWORKS", "127.0.0.0/8,::1/128")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from annotation.demo.builder import load_demo  # noqa: E402
from annotation.models import Judgment  # noqa: E402
from judging.local_model import local_judge  # noqa: E402
from judging.models import JudgeRun  # noqa: E402
from judging.selectors import run_progress  # noqa: E402
from judging.services.runs import process_run, run_create  # noqa: E402
from judging.testing.services import LlamaServer  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=8, help="items judged per demo study")
    parser.add_argument("--only", default="", help="comma-separated task types (default: every text demo study)")
    args = parser.parse_args()
    only = {name for name in args.only.split(",") if name}
    call_command("migrate", verbosity=0)
    demo = load_demo()
    server = LlamaServer(Path(tempfile.mkdtemp(prefix="bench-local-judge-")))
    try:
        judge, _ = local_judge(owner=demo.user, base_url=server.base_url)
        print(f"{'study':<44} {'type':<16} {'judged':>6} {'unparseable':>11} {'failed':>6} {'s':>6}")
        for study in sorted(demo.created + demo.existing, key=lambda study: study.pk):
            if study.media_files.exists() or (only and study.task_type not in only):
                continue
            items = study.items.filter(is_attention_check=False).order_by("position")[: args.items]
            started = time.monotonic()
            run = run_create(study=study, judge=judge, items=items, enqueue=False)
            process_run(run_id=run.pk)
            progress = run_progress(run=JudgeRun.objects.get(pk=run.pk))
            print(
                f"{study.name[:44]:<44} {study.task_type:<16} {progress.judged:>6} {progress.unparseable:>11} "
                f"{progress.failed:>6} {time.monotonic() - started:>6.1f}"
            )
            if study.task_type == "micro_edit":
                words = Judgment.objects.filter(rater=judge.rater, study=study).values_list("value", flat=True)
                print("    words:", ", ".join(repr((value or {}).get("replacement")) for value in words))
    finally:
        server.stop()


if __name__ == "__main__":
    main()
