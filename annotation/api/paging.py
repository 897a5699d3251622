"""Paging a list inside an ``APIView``, the same way the generic list views do it.

Views that are not ``ListAPIView`` (their ``get`` filters first, or the class also
serves a POST) call ``page_of``; the schema shows the same ``{count, next, previous,
results}`` envelope because drf-spectacular reads the view's ``pagination_class``.
"""

from typing import Any

from django.db.models import QuerySet
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from .pagination import BoundedLimitOffsetPagination


# A comment, not a docstring: drf-spectacular would publish a docstring as every operation's description.
class PagedListMixin:
    pagination_class = BoundedLimitOffsetPagination
    request: Any

    def page_of(
        self, queryset: QuerySet, serializer_class: type[BaseSerializer], context: dict | None = None
    ) -> Response:
        paginator = self.pagination_class()
        rows = paginator.paginate_queryset(queryset, self.request, view=self)
        data = serializer_class(rows, many=True, context={"request": self.request, **(context or {})}).data
        return paginator.get_paginated_response(data)
