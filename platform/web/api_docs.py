"""The API's documentation page, served from this site only.

drf-spectacular's own template puts Swagger UI's init code inline; ours loads every script,
style and font from our static files (the sidecar package ships Swagger UI), so the page
works offline and under the site's Content-Security-Policy. The init script comes from the
split view's `?script` URL, never inline.

No Redoc page: its bundle always loads a logo from cdn.redoc.ly, which the policy forbids.
"""

from __future__ import annotations

from drf_spectacular.views import SpectacularSwaggerSplitView


class ApiSwaggerView(SpectacularSwaggerSplitView):
    template_name = "web/api_swagger.html"
