"""The judging side of every task type, keyed by the annotation task type's name.

Look one up with ``judging_type(name)``. Each module here says how an LLM is
asked about that type (type-specific prompt variables, the output JSON schema,
the default prompt template), how its answer is read, and what the baseline
judges answer. See docs/task-types.md.
"""

from .base import JudgingType, NoBaseline, StudyFacts
from .best_worst import BestWorstJudging
from .binary import BinaryJudging
from .free_text import ExplanationJudging, MicroEditJudging
from .ordinal import OrdinalJudging
from .pairwise import PairwiseJudging
from .pick_one import PickOneJudging
from .reading import Unparseable
from .vote_allocation import VoteAllocationJudging

JUDGING_TYPES: dict[str, JudgingType] = {
    t.name: t
    for t in (
        PairwiseJudging(),
        OrdinalJudging(),
        PickOneJudging(),
        BinaryJudging(),
        VoteAllocationJudging(),
        MicroEditJudging(),
        ExplanationJudging(),
        BestWorstJudging(),
    )
}


def judging_type(name: str) -> JudgingType:
    """The judging side of task type ``name``; ValueError when the type has none."""
    try:
        return JUDGING_TYPES[name]
    except KeyError:
        known = ", ".join(sorted(JUDGING_TYPES))
        raise ValueError(f"The task type {name!r} has no judging side; known: {known}.") from None


def default_template_name(name: str) -> str:
    """The built-in prompt a judge uses for task type ``name`` when none is pinned ("" when it has none)."""
    found = JUDGING_TYPES.get(name)
    return found.default_template if found else ""


__all__ = [
    "JUDGING_TYPES",
    "default_template_name",
    "JudgingType",
    "NoBaseline",
    "StudyFacts",
    "Unparseable",
    "judging_type",
]
