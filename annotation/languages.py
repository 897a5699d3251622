"""The language a study speaks to its annotators.

A study's config ``language`` (a BCP 47 tag such as ``zh``, ``ja`` or
``en``) says what language its items are in; the annotator pages use it for
their own words too, when Funnybone has a translation for it (``LANGUAGES`` in
settings: English, Simplified Chinese, Japanese). A language without one (or
no language at all) gets English. The researcher's pages are English whatever
the study's language.

Labels and questions the platform wrote (task-type defaults, protocol
templates) are marked with ``gettext_noop`` where they are written and looked
up in the catalog when shown, so a study that keeps them shows them in its language;
a label the researcher wrote is shown as written.
"""

import re
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.conf.locale import LANG_INFO
from django.http import HttpRequest, HttpResponse
from django.utils import translation

# A BCP 47 tag such as "zh", "ja" or "zh-Hant"; anything else is not put in a lang attribute.
LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$")


def _known_languages() -> frozenset[str]:
    # The primary subtags of every language Django describes: far more than the pages are translated into,
    # since a study's items may be in any of them (its pages then speak English).
    return frozenset(code.split("-")[0] for code in LANG_INFO)


def language_problem(value: Any) -> str | None:
    """Why a study's config ``language`` is refused (phrased to follow the setting's name); None when it is fine.

    Every door asks this (the study forms, the API, study files, through ``study_files.config_problems``):
    the value ends up in a lang attribute and picks the pages' translation, so it must be a tag of a
    language we know, not ``xx<script>`` or two thousand characters.
    """
    if value is None or value == "":
        return None
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
    if not isinstance(value, str) or not LANGUAGE_TAG.match(value.strip()):
        return f"{shown} is not a language tag; write one such as en, zh, ja or de."
    if value.strip().split("-")[0].lower() not in _known_languages():
        return f"{shown} is not a language Funnybone knows; write one such as en, zh, ja or de."
    return None


def items_language(config: dict[str, Any] | None) -> str:
    """The study's language tag as written in its config, or "" when there is none (or it is not a tag)."""
    language = str((config or {}).get("language", "")).strip()
    return language if LANGUAGE_TAG.match(language) else ""


def annotator_language(config: dict[str, Any] | None) -> str:
    """The language the annotator pages use for a study with this config: one of settings.LANGUAGES."""
    tag = items_language(config)
    if not tag:
        return settings.LANGUAGE_CODE
    try:
        # zh, zh-CN, zh-Hans and zh-SG all find zh-hans; a Chinese reader of zh-Hant gets it too.
        return translation.get_supported_language_variant(tag.lower())
    except LookupError:
        return settings.LANGUAGE_CODE


def platform_text(text: str) -> str:
    """A label or question in the active language when the platform wrote it, else as written."""
    return translation.gettext(text) if text else text


def in_language(find_config: Callable[..., dict[str, Any] | None]) -> Callable:
    """Run a view in the language ``annotator_language`` picks from ``find_config(request, **view_kwargs)``.

    The language is only active while the view runs (and its templates render), so
    nothing carries over to the next request this thread serves; the response says it.
    """

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            language = annotator_language(find_config(request, **kwargs))
            with translation.override(language):
                request.LANGUAGE_CODE = language
                response = view(request, *args, **kwargs)
            response.headers.setdefault("Content-Language", language)
            return response

        return wrapped

    return decorator
