"""Pagination for every list in the API: limit/offset, with a ceiling on the limit.

DRF's LimitOffsetPagination accepts any ``?limit=``, so one request could ask
for a million items at once; here a larger limit is cut to ``max_limit``. A limit
or offset that is not a whole number in range (``limit=abc``, ``offset=-1``) is a
400 naming the parameter, as the schema says, instead of being silently ignored.
"""

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 1000
MAX_OFFSET = 2**31 - 1


def _whole(request: Any, name: str, minimum: int, maximum: int | None) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValidationError({name: ["A valid integer is required."]}) from None
    if value < minimum:
        raise ValidationError({name: [f"Ensure this value is greater than or equal to {minimum}."]})
    return min(value, maximum) if maximum is not None else value


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT

    def get_limit(self, request: Any) -> int | None:
        limit = _whole(request, self.limit_query_param, 1, self.max_limit)
        return self.default_limit if limit is None else limit

    def get_offset(self, request: Any) -> int:
        offset = _whole(request, self.offset_query_param, 0, None)
        if offset is not None and offset > MAX_OFFSET:
            raise ValidationError({self.offset_query_param: [f"Ensure this value is at most {MAX_OFFSET}."]})
        return offset or 0

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.limit_query_param:
                parameter["schema"]["minimum"] = 1
                parameter["description"] += f" A limit above {self.max_limit} is cut to {self.max_limit}."
            elif parameter["name"] == self.offset_query_param:
                parameter["schema"].update(minimum=0, maximum=MAX_OFFSET)
        return parameters
