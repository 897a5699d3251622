"""Reproducible orders: each rater's item order and each assignment's candidate order."""

import hashlib
import random

from ..models import Study


def _digest(*parts: object) -> int:
    text = ":".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


def item_sort_key(*, study: Study, rater_id: int, item_id: int, position: int) -> tuple[int, int]:
    """Sort key giving the study's configured item order for one rater."""
    if study.item_order == Study.ItemOrder.AS_LISTED:
        return (position, item_id)
    if study.item_order == Study.ItemOrder.SHARED_RANDOM:
        return (_digest(study.seed, item_id), item_id)
    return (_digest(study.seed, rater_id, item_id), item_id)


def candidate_rng(*, study: Study, rater_id: int, item_id: int, trial: int = 0) -> random.Random:
    """A seeded generator for the candidate order one rater sees on one item."""
    return random.Random(_digest("candidates", study.seed, rater_id, item_id, trial))  # noqa: S311 - not crypto
