"""A JSON Schema of study files, for editors (``manage.py study_schema``).

Built from the same declarations the loader checks with — the study settings
(annotation/study_settings.py), the task types and their configuration keys,
the item shape, and the sections other apps register — so it cannot fall
behind them. It is a help for writing files, not the check itself: the
loader still has the last word (a gold answer against the task type, a
candidate count, an item file's rows), and its messages say more.

Draft 7, the newest draft the YAML editors' language server fully supports.
"""

from typing import Any

from .importers.items import CANDIDATE_KEYS, ITEM_KEYS
from .models import Study
from .study_files import COMMON_CONFIG_KEYS, SECTIONS, STUDY_KEYS
from .study_settings import SETTINGS, StudySetting
from .task_types import TASK_TYPES

DRAFT = "http://json-schema.org/draft-07/schema#"
# The loader reads a number as its text, and an optional field left null as empty.
_TEXT_OR_NUMBER = {"type": ["string", "number"]}
_OPTIONAL_TEXT = {"type": ["string", "number", "null"]}
_OPTIONAL_OBJECT = ["object", "null"]


def _setting_schema(setting: StudySetting) -> dict[str, Any]:
    schema: dict[str, Any] = {"description": setting.help_text}
    if setting.kind in ("whole_number", "number"):
        schema["type"] = "integer" if setting.kind == "whole_number" else "number"
        if setting.minimum is not None:
            schema["minimum"] = setting.minimum
        if setting.maximum is not None:
            schema["maximum"] = setting.maximum
        if setting.below is not None:
            schema["exclusiveMaximum"] = setting.below
        if setting.nullable:
            schema["type"] = [schema["type"], "null"]
    elif setting.kind == "choice":
        schema["enum"] = setting.choices
    else:
        # `key:` with nothing after it is null in YAML; the loader leaves such a setting as it is.
        schema["type"] = ["string", "null"]
        if setting.max_length is not None:
            schema["maxLength"] = setting.max_length
        if not setting.allow_blank:
            schema["pattern"] = r"\S"
        if setting.kind == "url":
            schema["pattern"] = r"^(\s*https?://\S+\s*)?$"
    if not setting.generated_default:
        schema["default"] = setting.default
    return schema


def _config_schemas() -> list[dict[str, Any]]:
    """For each task type: its config keys (with their defaults); other keys are errors, as when loading."""
    rules = []
    for name, kind in TASK_TYPES.items():
        properties = {key: {"default": value} for key, value in kind.default_config.items()}
        for key in COMMON_CONFIG_KEYS:
            properties.setdefault(key, {})
        rules.append(
            {
                "if": {"properties": {"task_type": {"const": name}}, "required": ["task_type"]},
                "then": {
                    "properties": {
                        "config": {
                            "type": ["object", "null"],
                            "description": f"Settings of the {name} task type ({kind.title}); see docs/study-files.md.",
                            "properties": properties,
                            "additionalProperties": False,
                        }
                    }
                },
            }
        )
    return rules


def _item_schema() -> dict[str, Any]:
    candidate = {
        "type": "object",
        "required": ["key", "text"],
        "additionalProperties": False,
        "properties": {
            "key": {**_TEXT_OR_NUMBER, "description": "Item-local id stored in judgments; never shown to raters."},
            "text": _TEXT_OR_NUMBER,
            "context": {**_OPTIONAL_TEXT, "description": "Its own prompt, when options come from different prompts."},
            "provenance": {
                "type": _OPTIONAL_OBJECT,
                "description": "Generating model, source, ...; never shown to raters.",
            },
        },
    }
    item = {
        "type": "object",
        "required": ["id"],
        "additionalProperties": False,
        "properties": {
            "id": {**_TEXT_OR_NUMBER, "description": "Unique in the study, up to 200 characters."},
            "prompt": {**_OPTIONAL_TEXT, "description": "Shown above the text."},
            "text": {**_OPTIONAL_TEXT, "description": "The joke, response or headline being judged."},
            "metadata": {"type": _OPTIONAL_OBJECT, "description": "Never shown to raters; kept for analysis."},
            "gold": {"description": "The known answer in the task type's value shape, or written plainly."},
            "attention_check": {
                "type": ["boolean", "string", "integer", "null"],
                "description": "yes/no, true/false, 1/0.",
            },
            "candidates": {"type": ["array", "null"], "items": candidate},
        },
    }
    # Both lists come from the importer, so a key it learns shows up here as an unchecked one.
    for key in ITEM_KEYS:
        item["properties"].setdefault(key, {})
    for key in CANDIDATE_KEYS:
        candidate["properties"].setdefault(key, {})
    return item


def study_file_schema() -> dict[str, Any]:
    """The JSON Schema of a study file (YAML or JSON), as a dict ready for ``json.dumps``."""
    properties: dict[str, Any] = {
        "name": {"type": "string", "minLength": 1, "maxLength": 200, "description": "The study's name."},
        "task_type": {"enum": list(TASK_TYPES), "description": "What raters do with each item."},
        "config": {"type": ["object", "null"], "description": "The task type's settings."},
        **{setting.name: _setting_schema(setting) for setting in SETTINGS},
        "state": {"enum": Study.State.values, "default": Study.State.DRAFT.value},
        "items": {"type": "array", "items": _item_schema()},
        "items_file": {
            "type": "string",
            "minLength": 1,
            "description": "A CSV, XLSX or JSON Lines file of items, relative to the study file.",
        },
    }
    for key, section in SECTIONS.items():
        properties[key] = section.schema or {
            "description": f"Checked by the app that owns the {key!r} section when the file is loaded."
        }
    for key in STUDY_KEYS:
        properties.setdefault(key, {})  # a key the loader learns is at least not refused here
    return {
        "$schema": DRAFT,
        "title": "Funnybone study file",
        "description": "A whole study in one file: settings, task configuration, items. See docs/study-files.md.",
        "type": "object",
        "required": ["name", "task_type"],
        "additionalProperties": False,
        "properties": properties,
        "not": {"required": ["items", "items_file"]},
        "allOf": _config_schemas(),
    }
