"""Study templates of the HumorRank protocol (PROTOCOLS.md §1).

Two studies:

- ``humorrank-contest``: the source of a tournament. One item per prompt with
  one candidate per contestant (candidate key = contestant name). LLM judges
  compare the candidates two at a time in tournaments (round robin or adaptive
  Swiss); the matches live in a separate pairwise study per tournament that
  ``judging.services.tournaments`` creates with the template key
  ``humorrank-matches`` and a link back to this study in its config.
- ``humorrank-human-check``: a blind A/B/tie check by people on a sample of the
  matched pairs, the two jokes' sides randomised per vote. Built from a
  tournament (``human_check_create``) or imported with votes already given.

Both link to their contest study through ``config["source_study"]`` (the
contest study's slug), which is how the report finds them.
"""

from __future__ import annotations

from collections import defaultdict

from ..importers.items import FileProblem
from ..models import Rater
from ..services.imported_judgments import ImportedJudgment
from ..services.studies import CandidateSpec, ImportErrors, ItemSpec
from ..task_types import TIE
from .base import ImportPlan, StudyTemplate, register_template
from .tables import Row, Table

CONTEST = "humorrank-contest"
HUMAN_CHECK = "humorrank-human-check"
MATCHES = "humorrank-matches"
# The key in a match or human-check study's config that names its contest study (by slug).
SOURCE_LINK = "source_study"

MAX_CONTESTANTS = 9  # the paper's K; the pick-one task type offers at most nine options
MAX_KEY_LENGTH = 100  # Candidate.key

ANALYSES = {
    # Percentile CI of the BT ratings, resampling matches. The paper used 100; published intervals use
    # 1,000 (the 95% interval under-covers at 100: bench/bench_bt_coverage.py). Set 100 to reproduce it.
    "bootstrap_resamples": 1000,
    "confidence": 0.95,
    "elo_orderings": 5,  # Stable Elo: random replays of the match history (10 in the paper's appendix)
    "elo_k_factor": 32,
    "human_check_pairs": 60,  # how many matched pairs a human check samples by default
}


def _problem(problems: list[str], row: Row, message: str) -> None:
    problems.append(f"{row.where}: {message}")


def _key_problem(name: str, column: str) -> str | None:
    if len(name) > MAX_KEY_LENGTH:
        return f"the {column} name is longer than {MAX_KEY_LENGTH} characters."
    if name.lower() == TIE:
        return f"{name!r} cannot name a contestant: it is the word for a tie."
    return None


# -- the contest: prompts × contestant outputs ---------------------------------------------


def import_contest(table: Table, study) -> ImportPlan:
    """One row per prompt and contestant: ``prompt_id, prompt, contestant, joke``."""
    table.require("prompt_id", "prompt", "contestant", "joke")
    problems: list[str] = []
    prompts: dict[str, str] = {}
    jokes: dict[str, dict[str, str]] = defaultdict(dict)
    first_row: dict[str, str] = {}
    for row in table.rows:
        pid, prompt, contestant, joke = (row.text(c) for c in ("prompt_id", "prompt", "contestant", "joke"))
        missing = [
            c for c, v in (("prompt_id", pid), ("prompt", prompt), ("contestant", contestant), ("joke", joke)) if not v
        ]
        if missing:
            _problem(problems, row, f"{', '.join(missing)} is empty.")
            continue
        if bad := _key_problem(contestant, "contestant"):
            _problem(problems, row, bad)
            continue
        if pid in prompts and prompts[pid] != prompt:
            _problem(problems, row, f"prompt {pid!r} has a different prompt text in {first_row[pid]}.")
            continue
        prompts.setdefault(pid, prompt)
        first_row.setdefault(pid, row.where)
        if contestant in jokes[pid]:
            _problem(problems, row, f"{contestant!r} already has a joke for prompt {pid!r}.")
            continue
        jokes[pid][contestant] = joke
    for pid, by_contestant in jokes.items():
        if len(by_contestant) < 2:
            problems.append(f"Prompt {pid!r} ({first_row[pid]}): a prompt needs jokes from at least two contestants.")
        elif len(by_contestant) > MAX_CONTESTANTS:
            problems.append(
                f"Prompt {pid!r} ({first_row[pid]}): {len(by_contestant)} contestants; at most {MAX_CONTESTANTS}."
            )
    if problems:
        raise ImportErrors(problems)
    items = [
        ItemSpec(
            external_id=pid,
            prompt=prompts[pid],
            candidates=[
                CandidateSpec(key=name, text=text, provenance={"contestant": name})
                for name, text in sorted(jokes[pid].items())
            ],
            metadata={"prompt_id": pid},
            row=first_row[pid],
        )
        for pid in prompts
    ]
    return ImportPlan(items=items)


# -- the human check: blind A/B/tie votes on sampled pairs ------------------------------------

HUMAN_CHECK_COLUMNS = ("pair_id", "prompt", "contestant_a", "joke_a", "contestant_b", "joke_b")


def _vote(row: Row, a: str, b: str) -> tuple[str | None, str | None]:
    """The vote as a candidate key (or tie), and a problem."""
    raw = row.text("choice")
    word = raw.lower()
    if word in ("a", a.lower()):
        return a, None
    if word in ("b", b.lower()):
        return b, None
    if word in (TIE, "tie", "draw", "equal"):
        return TIE, None
    return None, f"choice {raw!r} is not A, B, tie or one of the two contestants ({a}, {b})."


def _shown_order(row: Row, a: str, b: str) -> tuple[list[str], str | None]:
    first = row.text("shown_first")
    if not first:
        return [], None
    if first.lower() in ("a", a.lower()):
        return [a, b], None
    if first.lower() in ("b", b.lower()):
        return [b, a], None
    return [], f"shown_first {first!r} is neither A, B nor one of the two contestants."


def import_human_check(table: Table, study) -> ImportPlan:
    """One row per vote (or per pair, without a vote): the pair, then ``rater`` and ``choice``."""
    table.require(*HUMAN_CHECK_COLUMNS)
    problems: list[str] = []
    pairs: dict[str, tuple[tuple[str, ...], str]] = {}
    items: list[ItemSpec] = []
    votes: list[ImportedJudgment] = []
    for row in table.rows:
        cells = tuple(row.text(c) for c in HUMAN_CHECK_COLUMNS)
        pair_id, prompt, a, joke_a, b, joke_b = cells
        missing = [c for c, v in zip(HUMAN_CHECK_COLUMNS, cells, strict=True) if not v]
        if missing:
            _problem(problems, row, f"{', '.join(missing)} is empty.")
            continue
        bad = _key_problem(a, "contestant_a") or _key_problem(b, "contestant_b")
        if bad or a == b:
            _problem(problems, row, bad or "the two jokes come from the same contestant; a pair needs two.")
            continue
        if pair_id in pairs:
            if pairs[pair_id][0] != cells:
                _problem(problems, row, f"pair {pair_id!r} differs from {pairs[pair_id][1]}; repeat it exactly.")
                continue
        else:
            pairs[pair_id] = (cells, row.where)
            items.append(
                ItemSpec(
                    external_id=pair_id,
                    prompt=prompt,
                    candidates=[
                        CandidateSpec(key=a, text=joke_a, provenance={"contestant": a}),
                        CandidateSpec(key=b, text=joke_b, provenance={"contestant": b}),
                    ],
                    metadata={"prompt_id": row.text("prompt_id") or pair_id, "contestants": [a, b]},
                    row=row.where,
                )
            )
        rater, choice = row.text("rater"), row.text("choice")
        if not rater and not choice:
            continue  # a pair to be judged, no vote yet
        if not rater or not choice:
            _problem(problems, row, "a vote needs both rater and choice (leave both empty for a pair with no vote).")
            continue
        value, bad = _vote(row, a, b)
        shown, bad_order = _shown_order(row, a, b)
        if bad or bad_order:
            _problem(problems, row, bad or bad_order)
            continue
        kind = row.text("rater_kind").lower() or Rater.Kind.CROWD
        votes.append(
            ImportedJudgment(
                rater=rater, item=pair_id, value={"choice": value}, kind=kind, shown_order=shown, row=row.where
            )
        )
    if problems:
        raise ImportErrors(problems)
    if not items:
        raise FileProblem("The file holds no pairs.")
    return ImportPlan(items=items, judgments=votes)


# -- the templates ---------------------------------------------------------------------------------

register_template(
    StudyTemplate(
        key=CONTEST,
        protocol="humorrank",
        title="HumorRank — contest (prompts × contestants)",
        description=(
            "Prompts with one joke from each contestant (a generator model). LLM judges compare the "
            "jokes two at a time in tournaments; the report ranks the contestants."
        ),
        task_type="pick_one",
        config={"question": "Which of these jokes is the funniest answer to the prompt?"},
        settings={
            "quota_per_item": 3,
            "item_order": "shared_random",
            "attention_check_rate": 0.0,
            "consent_text": (
                "You will read short jokes written by computer programs for the same prompt and pick the "
                "one you find funniest. Some jokes may miss the mark or touch on sensitive topics; you can "
                "stop at any time. We keep only your answers, under an anonymous id."
            ),
            "instructions_text": (
                "Each screen shows a prompt and several jokes written for it. Pick the joke that would get "
                "the biggest laugh from a general adult audience. Ignore length and the order of the jokes."
            ),
        },
        analyses=ANALYSES,
        importer=import_contest,
        columns="prompt_id, prompt, contestant, joke — one row per prompt and contestant",
    )
)

register_template(
    StudyTemplate(
        key=HUMAN_CHECK,
        protocol="humorrank",
        title="HumorRank — blind human A/B check",
        description=(
            "People compare two jokes on the same prompt, shown as A and B in a random order, and "
            "pick the funnier or call a tie; the report compares their votes with the LLM judges'."
        ),
        task_type="pairwise",
        config={"labels": ["Joke A", "Joke B", "Tie"], "allow_tie": True, "side_by_side": True},
        settings={
            "quota_per_item": 3,
            "item_order": "random_per_rater",
            "attention_check_rate": 0.0,
            "attention_check_policy": "flag",
            "consent_text": (
                "You will compare pairs of short jokes written by computer programs and say which one is "
                "funnier. The jokes may occasionally be crude or miss badly; you may stop whenever you "
                "like. Only your choices are stored, under an anonymous id."
            ),
            "instructions_text": (
                "Read the prompt and the two jokes, A and B. Pick the one that would make more people laugh, "
                "or Tie if you honestly cannot separate them. Which side a joke is on means nothing. "
                "Keys: 1 = A, 2 = B, 3 = Tie."
            ),
        },
        analyses=ANALYSES,
        importer=import_human_check,
        columns=(
            "pair_id, prompt, contestant_a, joke_a, contestant_b, joke_b (one row per pair), optionally prompt_id; "
            "for votes already given: rater, choice (A, B, tie or a contestant), shown_first, rater_kind"
        ),
    )
)
