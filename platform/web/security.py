"""What a locked-out sign-in sees (django-axes calls `lockout_response`, settings
AXES_LOCKOUT_CALLABLE): the site's page for people, JSON for API clients; both say how long
to wait, also as `Retry-After`."""

from __future__ import annotations

import math

from axes.helpers import get_cool_off
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    cool_off = get_cool_off(request)
    seconds = int(cool_off.total_seconds()) if cool_off else 0
    minutes = max(1, math.ceil(seconds / 60))
    message = (
        "Too many failed sign-ins for this account from your address: "
        f"sign-in is refused for {minutes} minute{'s' if minutes != 1 else ''}, even with the right password."
    )
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": message}, status=429)
    else:
        response = render(request, "web/locked_out.html", {"message": message, "minutes": minutes}, status=429)
    if seconds:
        response["Retry-After"] = str(seconds)
    return response
