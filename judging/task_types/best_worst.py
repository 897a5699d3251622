"""Best–worst scaling for an LLM: the numbers of the funniest and the least funny of the jokes shown.

Baselines: random (two different jokes), length (the shortest is the
funniest, the longest the least funny) and constant (the listed positions
people most often marked best and worst).
"""

import random
import re
from collections import Counter
from typing import Any

from annotation.models import Item
from annotation.task_types.best_worst import BEST, WORST, BestWorst

from ..prompts.builtin import BEST_WORST
from .answer_text import NUMBER, ORDINAL, number, plain, statements
from .base import JudgingType, Labelled, StudyFacts, by_length, json_object
from .reading import Unparseable, choice_number, first_key, keyed, one

_NUMBER = rf"(?:joke\s*|option\s*|#|(?:the\s+)?(?={ORDINAL}))?(?:{NUMBER}|{ORDINAL})(?:\s+(?:one|joke))?(?!\w|\.\d)"
_BEST_KEYS = r"best|funniest|most\s+funny|最好笑|最有趣|最も面白い|一番面白い"
_WORST_KEYS = r"worst|least\s+funny|least\s+funniest|最不好笑|最无趣|最もつまらない|一番つまらない"


def _joke(raw: str, shown: list[str]) -> str:
    word = re.sub(r"^(?:joke|option|#|the)\s*|\s+(?:one|joke)$", "", raw.strip(), flags=re.I)
    return choice_number(number(word), shown)


def _most_common(positions: Counter, *, besides: int | None = None) -> int | None:
    """The most frequent position (equal counts: the earlier one), leaving out ``besides``."""
    left = [p for p in positions if p != besides]
    return min(left, key=lambda p: (-positions[p], p)) if left else None


class BestWorstJudging(JudgingType):
    name = BestWorst.name
    default_template = BEST_WORST.name
    answer_keys = (BEST, WORST)

    def output_schema(self, *, config: dict[str, Any], n_candidates: int, item_text: str = "") -> dict[str, Any] | None:
        number = {"type": "integer", "minimum": 1, "maximum": n_candidates}
        return json_object({BEST: number, WORST: number}, [BEST, WORST])

    def from_json(self, obj: dict[str, Any], *, shown: list[str], config: dict[str, Any]) -> tuple[Any, dict]:
        best = first_key(obj, BEST, "funniest", "most funny", "most_funny")
        worst = first_key(obj, WORST, "least funny", "least_funny", "least")
        if best is None or worst is None:
            raise Unparseable("the JSON answer needs both a best and a worst joke")
        extras = {"reasoning": obj["reasoning"]} if isinstance(obj.get("reasoning"), str) else {}
        return {BEST: choice_number(best, shown), WORST: choice_number(worst, shown)}, extras

    def from_text(self, text: str, *, shown: list[str], config: dict[str, Any]) -> tuple[Any, str]:
        text = plain(text)
        clauses = statements(text)
        best = [_joke(raw, shown) for clause in clauses for raw in keyed(clause, _BEST_KEYS, _NUMBER)]
        worst = [_joke(raw, shown) for clause in clauses for raw in keyed(clause, _WORST_KEYS, _NUMBER)]
        return {BEST: one(best, "best joke"), WORST: one(worst, "worst joke")}, "labelled"

    def constant_from(self, *, config: dict[str, Any], values: Labelled) -> dict[str, Any] | None:
        best, worst = Counter(), Counter()
        for value, keys in values:
            if value.get(BEST) in keys and value.get(WORST) in keys:
                best[keys.index(value[BEST])] += 1
                worst[keys.index(value[WORST])] += 1
        top = _most_common(best)
        bottom = _most_common(worst, besides=top)
        if top is None or bottom is None:
            return None
        return {"best_position": top, "worst_position": bottom}

    def constant_without_labels(self, *, config: dict[str, Any]) -> dict[str, Any]:
        return {"best_position": 0, "worst_position": BestWorst.candidates[1] - 1}

    def constant_answer(
        self, constant: dict[str, Any], *, shown: list[str], keys: list[str], config: dict[str, Any]
    ) -> dict[str, Any]:
        listed = keys or shown
        best = listed[min(constant["best_position"], len(listed) - 1)]
        worst = listed[min(constant["worst_position"], len(listed) - 1)]
        if worst == best:
            worst = next(key for key in reversed(listed) if key != best)
        return {BEST: best, WORST: worst}

    def random_answer(self, *, config: dict[str, Any], shown: list[str], rng: random.Random) -> dict[str, Any]:
        best, worst = rng.sample(shown, 2)
        return {BEST: best, WORST: worst}

    def length_answer(
        self, *, config: dict[str, Any], item: Item, shown: list[str], texts: dict[str, str], facts: StudyFacts
    ) -> dict[str, Any]:
        ranked = by_length(shown, texts)
        return {BEST: ranked[0], WORST: ranked[-1]}
