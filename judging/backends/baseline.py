"""Baseline judges: answers that need no model, the floor every report is read against.

- random: a uniformly random answer (seeded per judge, item and trial).
- constant: the same answer for every item, taken from the study's human
  labels: the scale point nearest their mean rating, the majority label, or the
  position (first / second / tie) people chose most. With no human labels yet
  it uses the gold answers; with neither, the scale's middle point or the first
  option, and the provenance says which source it used.
- length: shorter is funnier. Pairwise: the shorter candidate (a tie when both
  are equally long); pick one: the shortest; a rating: higher for shorter texts,
  by the text's length rank within the study; a binary label: the positive
  label for texts no longer than the study's median.

Written answers (micro-edits, explanations) have no baseline.
"""

import bisect
import random
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from annotation.models import Candidate, Item, Judgment, Rater, Study
from annotation.task_types import TIE

RANDOM, CONSTANT, LENGTH = "random", "constant", "length"


class NoBaseline(Exception):
    pass


@dataclass
class StudyFacts:
    """What the constant and length baselines need to know about the whole study, read once per run."""

    constant: dict[str, Any] = field(default_factory=dict)
    constant_source: str = ""
    lengths: list[int] = field(default_factory=list)


def _human_values(study: Study) -> list[tuple[Any, list[str]]]:
    rows = Judgment.objects.filter(
        study=study,
        status=Judgment.Status.OK,
        rater__kind__in=[Rater.Kind.EXPERT, Rater.Kind.CROWD],
        item__is_attention_check=False,
    ).values_list("value", "item_id")
    keys = _candidate_keys(study)
    return [(value, keys.get(item_id, [])) for value, item_id in rows]


def _gold_values(study: Study) -> list[tuple[Any, list[str]]]:
    keys = _candidate_keys(study)
    rows = study.items.filter(gold__isnull=False, is_attention_check=False).values_list("gold", "pk")
    return [(gold, keys.get(pk, [])) for gold, pk in rows]


def _candidate_keys(study: Study) -> dict[int, list[str]]:
    keys: dict[int, list[str]] = {}
    rows = Candidate.objects.filter(item__study=study).order_by("item_id", "position", "id")
    for item_id, key in rows.values_list("item_id", "key"):
        keys.setdefault(item_id, []).append(key)
    return keys


def _constant_from(
    task_type: str, config: dict[str, Any], values: list[tuple[Any, list[str]]]
) -> dict[str, Any] | None:
    if not values:
        return None
    if task_type == "ordinal":
        mean = statistics.fmean(v["rating"] for v, _ in values)
        return {"rating": min(config["points"], key=lambda p: (abs(p - mean), p))}
    if task_type == "binary":
        counts = Counter(v["label"] for v, _ in values)
        order = [str(o["value"]) for o in config["options"]]
        return {"label": max(order, key=lambda label: (counts[label], -order.index(label)))}
    if task_type in ("pairwise", "pick_one"):
        positions = Counter(
            TIE if v["choice"] == TIE else keys.index(v["choice"]) for v, keys in values if v["choice"] in [*keys, TIE]
        )
        if not positions:
            return None
        # Most frequent; equal counts go to the earlier position, then to the tie.
        return {"position": min(positions, key=lambda p: (-positions[p], str(p)))}
    if task_type == "vote_allocation":
        positions = Counter()
        for v, keys in values:
            for key, count in v["votes"].items():
                if key in keys:
                    positions[keys.index(key)] += count
        return {"position": min(positions, key=lambda p: (-positions[p], p))} if positions else None
    raise NoBaseline(f"No baseline answers {task_type} items.")


def study_facts(*, study: Study, task_type: str, config: dict[str, Any], kind: str) -> StudyFacts:
    facts = StudyFacts()
    if kind == CONSTANT:
        for source, values in (("human_labels", _human_values(study)), ("gold", _gold_values(study))):
            constant = _constant_from(task_type, config, values)
            if constant is not None:
                facts.constant, facts.constant_source = constant, source
                break
        else:
            facts.constant_source = "no_labels"
            if task_type == "ordinal":
                points = config["points"]
                facts.constant = {"rating": points[(len(points) - 1) // 2]}
            elif task_type == "binary":
                facts.constant = {"label": str(config["options"][0]["value"])}
            else:
                facts.constant = {"position": 0}
    if kind == LENGTH:
        facts.lengths = sorted(
            len(t) for t in study.items.filter(is_attention_check=False).values_list("text", flat=True)
        )
    return facts


def _by_position(position: Any, shown: list[str], keys: list[str]) -> str:
    if position == TIE:
        return TIE
    return keys[position] if position < len(keys) else shown[0]


def baseline_value(
    *,
    kind: str,
    task_type: str,
    config: dict[str, Any],
    item: Item,
    shown: list[str],
    texts: dict[str, str],
    keys: list[str],
    facts: StudyFacts,
    rng: random.Random,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(value, provenance notes) of a baseline judge on one item; ``shown`` is the display order."""
    if task_type in ("micro_edit", "explanation"):
        raise NoBaseline("Baselines do not write text; use an LLM judge for this study.")
    if kind == RANDOM:
        return _random(task_type, config, shown, rng), {}
    if kind == CONSTANT:
        value = dict(facts.constant)
        if "position" in value:
            position = value.pop("position")
            if task_type == "vote_allocation":
                value = {"votes": {_by_position(position, shown, keys): 1}}
            else:
                choice = _by_position(position, shown, keys)
                if choice == TIE and not config.get("allow_tie", True):
                    choice = shown[0]
                value = {"choice": choice}
        return value, {"constant_source": facts.constant_source}
    if kind == LENGTH:
        return _length(task_type, config, item, shown, texts, facts), {}
    raise NoBaseline(f"Unknown baseline {kind!r}.")


def _random(task_type: str, config: dict[str, Any], shown: list[str], rng: random.Random) -> dict[str, Any]:
    if task_type == "pairwise":
        return {"choice": rng.choice([*shown, TIE] if config.get("allow_tie", True) else shown)}
    if task_type == "ordinal":
        return {"rating": rng.choice(config["points"])}
    if task_type == "binary":
        return {"label": str(rng.choice(config["options"])["value"])}
    if task_type == "pick_one":
        return {"choice": rng.choice(shown)}
    if task_type == "vote_allocation":
        k = int(config.get("max_votes", 3))
        picks = (
            [rng.choice(shown) for _ in range(k)]
            if config.get("allow_repeat", True)
            else rng.sample(shown, min(k, len(shown)))
        )
        return {"votes": dict(Counter(picks))}
    raise NoBaseline(f"No baseline answers {task_type} items.")


def _length(
    task_type: str, config: dict[str, Any], item: Item, shown: list[str], texts: dict[str, str], facts: StudyFacts
) -> dict[str, Any]:
    by_length = sorted(shown, key=lambda key: (len(texts[key]), shown.index(key)))
    if task_type == "pairwise":
        first, second = (len(texts[k]) for k in shown)
        if first == second and config.get("allow_tie", True):
            return {"choice": TIE}
        return {"choice": by_length[0]}
    if task_type == "pick_one":
        return {"choice": by_length[0]}
    if task_type == "vote_allocation":
        return {"votes": dict.fromkeys(by_length[: int(config.get("max_votes", 3))], 1)}
    lengths = facts.lengths or [len(item.text)]
    if task_type == "ordinal":
        # Share of the study's texts strictly shorter than this one: 0 for the shortest.
        rank = bisect.bisect_left(lengths, len(item.text)) / len(lengths)
        points = config["points"]
        return {"rating": points[len(points) - 1 - min(len(points) - 1, int(rank * len(points)))]}
    if task_type == "binary":
        values = [str(o["value"]) for o in config["options"]]
        positive = config.get("positive", values[0])
        negative = next(v for v in values if v != positive)
        return {"label": positive if len(item.text) <= statistics.median(lengths) else negative}
    raise NoBaseline(f"No baseline answers {task_type} items.")
