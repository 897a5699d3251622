# SPDX-License-Identifier: GPL-3.0-or-later
"""What the by-rater-group breakdown adds to the analysis report, beside the report without it.

    DATABASE_URL=postgres://…/scratch .venv/bin/python bench/bench_rater_groups.py [--judgments 200000] [--raters 40] [--groups 4]

Builds an ordinal study straight into the database (``bench/bench_export.build``:
every crowd rater judges every item), gives each rater an ``age_band`` answer
(``--groups`` groups, round robin), then computes the analysis page's stored
report (``ratings.analysis.analysis_result``, what a worker runs) for all human
raters, without a breakdown (the reference) and with the breakdown by
``age_band``, ``--repeat`` times each, alternating, and prints the medians and
their ratio. The breakdown computes α once per group on that group's judgments
only, so the expected cost is about one more whole-report agreement figure.
The database must be a scratch one: the bench migrates it and adds a study.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judgments", type=int, default=200_000)
    parser.add_argument("--raters", type=int, default=40)
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "funnybone.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from annotation.models import Enrollment, QuestionAnswer, Study
    from annotation.rater_steps import demographic_questions
    from bench.bench_export import build
    from ratings.analysis import analysis_result

    study = Study.objects.get(pk=build(args.judgments, args.raters, 0))
    study.questionnaire = {"before": ["demographics"]}
    study.save(update_fields=["questionnaire"])
    bands = [value for value, _label in demographic_questions()[0].options][: args.groups]
    enrollments = list(Enrollment.objects.filter(study=study).order_by("rater_id"))
    QuestionAnswer.objects.bulk_create(
        QuestionAnswer(enrollment=e, key="age_band", value=bands[n % len(bands)]) for n, e in enumerate(enrollments)
    )
    print(f"study {study.slug}: {args.judgments:,} judgments, {len(enrollments)} raters in {len(bands)} groups")

    def timed(by: str) -> float:
        start = time.perf_counter()
        result = analysis_result(study=study, group="humans", rater_ids=None, k=3, tie="higher", by_question=by)
        elapsed = time.perf_counter() - start
        if by:
            assert len(result["by_group"]["rows"]) == len(bands), result["by_group"]
        return elapsed

    plain, grouped = [], []
    for _ in range(args.repeat):
        plain.append(timed(""))
        grouped.append(timed("age_band"))
    p, g = statistics.median(plain), statistics.median(grouped)
    print(f"analysis report, no breakdown (reference): {p:.2f} s")
    print(f"analysis report with the breakdown by age_band: {g:.2f} s ({g / p:.2f}× the reference)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
