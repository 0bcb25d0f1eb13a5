"""API list paging: `?limit=&offset=` with bounds the database can take."""

from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

MAX_OFFSET = 2**31 - 1


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """DRF's limit/offset paging, but a limit above `max_limit` is cut to it and an offset
    past 2^31 - 1 is a 400 naming the parameter: unbounded, `?offset=99999999999999999999`
    reached PostgreSQL as "bigint out of range" (a 500). A malformed value keeps
    DRF's meaning (the default)."""

    max_limit = 1000

    def get_offset(self, request) -> int:
        offset = super().get_offset(request)
        if offset > MAX_OFFSET:
            raise ValidationError({self.offset_query_param: [f"Must be at most {MAX_OFFSET}."]})
        return offset
