"""An item's pictures as a model sees them, and the refusal of a model that cannot.

A judge or generator declares ``sees_images`` (``judging.models.EndpointSettings``). For one that
does, the user message of an item with pictures becomes a list of OpenAI chat content parts: the
item's own pictures (prompt first, then item), then each candidate's pictures in the order the
candidates are shown (so both orders of a pairwise item show the pictures swapped with their
texts), each candidate's introduced by a short text part naming its label, and last the rendered
template text. A message of an item without pictures stays the plain string it always was.

A model that does not see images is never run on items that carry pictures (nor audio or video,
which no model here is sent): ``blind_refusal`` is asked at run creation (pages, API,
``manage.py judge``) and again when a worker starts the run.
"""

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from django.core.exceptions import ValidationError

from annotation.media import MediaRef, media_data_uri
from annotation.models import Item, MediaAttachment, Study

from .render import LETTERS

# Item-level pictures come before the candidates', the prompt's before the item's.
_ROLE_ORDER = {"prompt": 0, "item": 1}


def is_image(ref: MediaRef) -> bool:
    return ref.content_type.startswith("image/")


# A run asks about the same cartoon for every caption, trial and order: the last few files read are kept
# encoded, by public id (a file's bytes never change under its id). Bounded: a file is at most
# FUNNYBONE_MEDIA_MAX_BYTES, so this holds a few of them.
_RECENT_URIS: OrderedDict[str, str] = OrderedDict()
_RECENT_MAX = 8
_recent_lock = threading.Lock()


def _data_uri(ref: MediaRef) -> str:
    with _recent_lock:
        uri = _RECENT_URIS.get(ref.id)
        if uri is not None:
            _RECENT_URIS.move_to_end(ref.id)
            return uri
    uri = media_data_uri(ref)
    with _recent_lock:
        _RECENT_URIS[ref.id] = uri
        while len(_RECENT_URIS) > _RECENT_MAX:
            _RECENT_URIS.popitem(last=False)
    return uri


def image_parts(refs: Sequence[MediaRef], *, shown: Sequence[str]) -> list[dict[str, Any]]:
    """The content parts carrying an item's pictures, candidates' in the order ``shown`` (their keys)."""
    parts: list[dict[str, Any]] = []
    own = sorted(
        (r for r in refs if r.role != "candidate" and is_image(r)),
        key=lambda r: (_ROLE_ORDER.get(r.role, 1), r.position),
    )
    parts += [_image_part(ref) for ref in own]
    for n, key in enumerate(shown):
        theirs = sorted(
            (r for r in refs if r.role == "candidate" and r.candidate_key == key and is_image(r)),
            key=lambda r: r.position,
        )
        if theirs:
            label = LETTERS[n] if n < len(LETTERS) else str(n + 1)
            parts.append({"type": "text", "text": f"Picture(s) of option {label} (shown {n + 1}):"})
            parts += [_image_part(ref) for ref in theirs]
    return parts


def _image_part(ref: MediaRef) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": _data_uri(ref)}}


def with_images(messages: list[dict[str, Any]], parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with the pictures placed before the text of the (last) user message."""
    if not parts:
        return messages
    out = [dict(m) for m in messages]
    user = out[-1]
    user["content"] = [*parts, {"type": "text", "text": user["content"]}]
    return out


def blind_refusal(*, study: Study, sees_images: bool, who: str, items: Iterable[Item] | None = None) -> str:
    """Why ``who`` (a judge or generator) may not work on the study's items; empty when it may.

    ``items`` None means every item a run over the whole study takes (all but attention checks)."""
    attached = MediaAttachment.objects.filter(item__study=study)
    if items is None:
        attached = attached.filter(item__is_attention_check=False)
    else:
        attached = attached.filter(item__in=[item.pk for item in items])
    if sees_images:
        attached = attached.exclude(media__content_type__startswith="image/")
        example = attached.select_related("item", "media").first()
        if example is None:
            return ""
        return (
            f"{who} cannot be run on this study: item {example.item.external_id!r} carries "
            f"{example.media.content_type} media, and models are sent pictures only; it would judge without it."
        )
    example = attached.select_related("item").first()
    if example is None:
        return ""
    count = attached.values("item").distinct().count()
    return (
        f"{who} is text-only, and {count} item(s) of this study carry pictures (for example item "
        f"{example.item.external_id!r}): it would answer without seeing them. Use a model that takes images and "
        "tick \u201cThe model sees images\u201d (sees_images: true), or pick another judge."
    )


def refuse_blind(*, study: Study, sees_images: bool, who: str, items: Iterable[Item] | None = None) -> None:
    """``blind_refusal`` as a ValidationError, for the services that create and start runs."""
    reason = blind_refusal(study=study, sees_images=sees_images, who=who, items=items)
    if reason:
        raise ValidationError(reason)
