"""Pagination for every list in the API: limit/offset, with a ceiling on the limit.

DRF's LimitOffsetPagination accepts any ``?limit=``, so one request could ask
for a million items at once; here a larger limit is cut to ``max_limit``.
"""

from rest_framework.pagination import LimitOffsetPagination

MAX_LIMIT = 1000


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    max_limit = MAX_LIMIT
