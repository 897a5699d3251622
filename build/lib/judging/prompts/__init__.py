"""Prompt templates: the built-in ones, rendering, and the answer schemas."""

from .builtin import BUILTIN_TEMPLATES, BuiltinTemplate, builtin
from .render import CandidateView, build_context, check_template, default_schema, render_messages

__all__ = [
    "BUILTIN_TEMPLATES",
    "BuiltinTemplate",
    "CandidateView",
    "build_context",
    "builtin",
    "check_template",
    "default_schema",
    "render_messages",
]
