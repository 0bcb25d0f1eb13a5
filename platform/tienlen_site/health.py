"""`GET /healthz` for load balancers and container health checks.

A middleware placed first, rather than a URL: probes come over plain http from inside the
container with whatever Host header they like, and must not be redirected to https or
refused by ALLOWED_HOSTS, which would report a healthy server as down. The database is
touched because a web process that cannot reach it serves nothing useful.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

HEALTH_PATH = "/healthz"


class HealthCheckMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path != HEALTH_PATH or request.method not in {"GET", "HEAD"}:
            return self.get_response(request)
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
                cursor.fetchone()
        except Exception as exc:  # report, never raise: the probe wants a status code
            return JsonResponse({"status": "error", "database": str(exc)}, status=503)
        return JsonResponse({"status": "ok", "database": "ok"})
