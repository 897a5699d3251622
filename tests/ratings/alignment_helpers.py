# SPDX-License-Identifier: GPL-3.0-or-later
"""Small hand-made studies whose alignment figures are known, shared by the alignment tests."""

from datetime import timedelta

from django.utils import timezone

from annotation.models import Assignment, Item, Judgment, Rater
from annotation.services.judgments import judgment_submit
from annotation.services.studies import CandidateSpec, ItemSpec, items_create, study_create, study_set_state
from tests.ratings.test_selectors import add_rater, judge, rate_all

__all__ = ["add_rater", "build_ordinal", "build_pairwise", "judge", "judge_in_order", "rate_all"]

HUMANS = {
    "ann": [0, 1, 2, 3, 0, 3],
    "bob": [0, 1, 2, 3, 1, 2],
    "cat": [1, 1, 2, 2, 0, 3],
}
#: Median of ann, bob and cat per item.
CONSENSUS = [0, 1, 2, 3, 0, 3]
JOKE_TYPES = [["pun", "cultural"], "pun", "cultural", "situational", None, ["pun"]]


def build_ordinal(owner, name="Ordinal alignment"):
    """Six 0–3 items, three humans, an excluded human and three judges with known answers.

    * twin answers the consensus itself;
    * contrarian answers 3 − consensus;
    * gappy answers the first three items right, one unparseable, one failed, one never judged.
    """
    study = study_create(owner=owner, name=name, task_type="ordinal", quota_per_item=20)
    items_create(
        study=study,
        items=[
            ItemSpec(external_id=f"joke-{i}", text=f"Joke {i}", metadata={"joke_type": t} if t else {})
            for i, t in enumerate(JOKE_TYPES)
        ],
    )
    study_set_state(study=study, state="open")
    raters = {n: add_rater(study, n) for n in HUMANS}
    raters["dan"] = add_rater(study, "dan", excluded=True)
    raters["twin"] = add_rater(study, "twin", Rater.Kind.LLM)
    raters["contrarian"] = add_rater(study, "contrarian", Rater.Kind.BASELINE)
    raters["gappy"] = add_rater(study, "gappy", Rater.Kind.LLM)
    for name, ratings in HUMANS.items():
        rate_all(study, raters[name], ratings)
    rate_all(study, raters["dan"], [3, 3, 0, 0, 3, 0])
    rate_all(study, raters["twin"], CONSENSUS)
    rate_all(study, raters["contrarian"], [3 - c for c in CONSENSUS])
    items = list(study.items.order_by("position"))
    for item, rating in zip(items[:3], CONSENSUS[:3], strict=True):
        judge(study, raters["gappy"], item, {"rating": rating})
    judge(study, raters["gappy"], items[3], None, status=Judgment.Status.UNPARSEABLE)
    judge(study, raters["gappy"], items[4], None, status=Judgment.Status.FAILED)
    return study, raters


def judge_in_order(
    study, rater, item, choice, *, shown, trial=0, base_trial=None, status=Judgment.Status.OK, features=None
):
    """A judge's pairwise verdict shown in the order ``shown`` (candidate keys), as judging records it."""
    now = timezone.now()
    assignment = Assignment.objects.create(
        study=study,
        item=item,
        rater=rater,
        trial=trial,
        leased_at=now,
        lease_expires_at=now + timedelta(minutes=10),
        shown_order=list(shown),
    )
    provenance = {"trial": trial if base_trial is None else base_trial, "swapped": base_trial is not None}
    if features is not None:
        provenance["features"] = features
    value = {"choice": choice} if status == Judgment.Status.OK else None
    return judgment_submit(
        assignment=assignment, rater=rater, value=value, status=status, provenance=provenance
    ).judgment


def build_pairwise(owner, name="Pairwise alignment"):
    """Four A/B items between generator models m0, m1, m2 and three human voters.

    Human majority per item: first, second, tie, first. Candidate keys are
    ``x``/``y``; the models are in the candidates' provenance.
    """
    study = study_create(owner=owner, name=name, task_type="pairwise", quota_per_item=20)
    pairs = [("m0", "m1"), ("m1", "m2"), ("m0", "m2"), ("m0", "m1")]
    items_create(
        study=study,
        items=[
            ItemSpec(
                external_id=f"pair-{i}",
                prompt=f"Headline {i}",
                candidates=[
                    CandidateSpec(key="x", text=f"Joke {i} by {a}", provenance={"model": a}),
                    CandidateSpec(key="y", text=f"Joke {i} by {b}", provenance={"model": b}),
                ],
                metadata={"source": "news" if i < 2 else "wordplay"},
            )
            for i, (a, b) in enumerate(pairs)
        ],
    )
    study_set_state(study=study, state="open")
    humans = {n: add_rater(study, n) for n in ("ann", "bob", "cat")}
    votes = {
        "ann": ["x", "y", "tie", "x"],
        "bob": ["x", "y", "tie", "y"],
        "cat": ["y", "x", "x", "x"],
    }
    items = list(Item.objects.filter(study=study).order_by("position"))
    for name, choices in votes.items():
        for item, choice in zip(items, choices, strict=True):
            judge(study, humans[name], item, {"choice": choice})
    return study, humans, items
