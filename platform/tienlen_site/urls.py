"""Top-level URL map: admin, the JSON API (with its schema and docs) and the spectator site."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from web.api_docs import ApiSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    # The schema and its reader live with the API they describe, at /api/v1/....
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/docs/", ApiSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/", include("tournaments.api.urls")),
    # Addresses published before the schema moved under /api/v1/ keep working.
    path("api/", RedirectView.as_view(pattern_name="api:root"), name="api-latest"),
    path("api/schema/", RedirectView.as_view(pattern_name="api-schema", query_string=True)),
    path("api/docs/", RedirectView.as_view(pattern_name="api-docs", query_string=True)),
    path("", include("web.urls")),
]
