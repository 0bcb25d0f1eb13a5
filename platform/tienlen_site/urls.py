"""Top-level URL map: admin, the JSON API and the spectator site."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("web.urls")),
]
