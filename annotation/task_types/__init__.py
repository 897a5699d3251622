"""Registry of task types. Look one up with ``get_task_type(name)``."""

from django.core.exceptions import ValidationError

from .base import MATRIX_LEVELS, PICK_BEST, PICK_WORST, TIE, ConfigField, Level, Option, Shortcut, TaskType
from .best_worst import BestWorst
from .binary import BinaryLabel
from .free_text import MicroEdit, WrittenExplanation
from .ordinal import OrdinalScale
from .pairwise import PairwiseChoice
from .pick_one import PickOne
from .vote_allocation import VoteAllocation

TASK_TYPES: dict[str, TaskType] = {
    t.name: t
    for t in (
        PairwiseChoice(),
        OrdinalScale(),
        PickOne(),
        BinaryLabel(),
        VoteAllocation(),
        MicroEdit(),
        WrittenExplanation(),
        BestWorst(),
    )
}


def get_task_type(name: str) -> TaskType:
    try:
        return TASK_TYPES[name]
    except KeyError:
        known = ", ".join(sorted(TASK_TYPES))
        raise ValidationError(f"Unknown task type {name!r}; known types: {known}.") from None


__all__ = [
    "MATRIX_LEVELS",
    "PICK_BEST",
    "PICK_WORST",
    "TASK_TYPES",
    "TIE",
    "ConfigField",
    "Level",
    "Option",
    "Shortcut",
    "TaskType",
    "get_task_type",
]
