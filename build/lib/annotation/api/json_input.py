"""JSON in API requests within the limits of ``annotation.json_limits``.

``BoundedJSONParser`` is every API's JSON parser (settings.REST_FRAMEWORK): a body
nested too deep, with an enormous integer, a NUL or a lone surrogate in a string
is a 400 naming the place (``{"quota_per_item": ["a number with 5,000 digits; ..."]}``)
instead of a RecursionError or a database error. ``BoundedJSONField`` does the same for
a JSON value posted as a form field, which DRF parses with ``json.loads`` itself.
"""

import codecs
import re
from typing import Any

from django.db import models
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding
from rest_framework.settings import api_settings
from rest_framework.utils.json import strict_constant

from ..json_limits import DataTooComplex, check_data, load_json

_FIELD = re.compile(r"^([^.\[]*)(.*)$", re.S)


def _field_error(exc: DataTooComplex) -> dict[str, list[str]]:
    """The error keyed by the body's top-level field, like a serializer's; the rest of the path in the message."""
    field, rest = _FIELD.match(exc.path).groups()
    rest = rest.lstrip(".")
    rest = rest if len(rest) <= 80 else rest[:80] + "…"
    message = f"{rest}: {exc.problem}" if rest else exc.problem[0].upper() + exc.problem[1:]
    return {field or api_settings.NON_FIELD_ERRORS_KEY: [message]}


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        try:
            text = codecs.getreader(get_encoding(parser_context or {}))(stream).read()
            # A NUL is left to the fields: DRF's CharField refuses it, and the fields below say where.
            return load_json(text, nul=False, parse_constant=strict_constant if self.strict else None)
        except DataTooComplex as exc:
            raise serializers.ValidationError(_field_error(exc)) from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None


class BoundedJSONField(serializers.JSONField):
    """A JSON value whose size, depth, numbers and text are within the limits.

    ``nul=False`` leaves NUL characters to the serializer's own validation (a study's config and
    items name the item and field that holds one).
    """

    def __init__(self, *, nul: bool = True, **kwargs: Any):
        self.nul = nul
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> Any:
        try:
            if getattr(data, "is_json_string", False):
                data = load_json(str(data), nul=self.nul)
            else:
                check_data(data, nul=self.nul)
        except DataTooComplex as exc:
            where = f"{exc.path}: " if exc.path else ""
            raise serializers.ValidationError(f"{where}{exc.problem}") from None
        except ValueError:
            self.fail("invalid")
        return super().to_internal_value(data)


# For a ModelSerializer: its model's JSONFields become BoundedJSONFields.
FIELD_MAPPING = {**serializers.ModelSerializer.serializer_field_mapping, models.JSONField: BoundedJSONField}
