"""The API's documentation pages, served from this site only.

drf-spectacular's own templates load Swagger UI's init code inline and Redoc's fonts from
Google; ours load every script, style and font from our static files (the sidecar package
ships Swagger UI and Redoc), so the pages work offline and under the site's
Content-Security-Policy. Swagger UI's init script comes from the split view's `?script` URL,
never inline.
"""

from __future__ import annotations

from csp.decorators import csp_update
from django.utils.decorators import method_decorator
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView


class ApiSwaggerView(SpectacularSwaggerSplitView):
    template_name = "web/api_swagger.html"


# Redoc styles itself with <style> elements it writes at run time (styled-components) and
# runs its search index in a worker it builds from a blob: URL. Both come from our own
# script; nothing is loaded from another host.
@method_decorator(
    csp_update({"style-src": ["'unsafe-inline'"], "worker-src": ["blob:"]}), name="dispatch"
)
class ApiRedocView(SpectacularRedocView):
    template_name = "web/api_redoc.html"
