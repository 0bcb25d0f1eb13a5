"""The browsable API (every API URL opened in a browser), fit for the site's
Content-Security-Policy."""

from __future__ import annotations

from rest_framework.renderers import BrowsableAPIRenderer


class StrictBrowsableAPIRenderer(BrowsableAPIRenderer):
    """DRF's renderer writes Pygments' code colours as an inline <style> element when
    Pygments is installed; the policy allows no inline style element, and the API pages show
    no highlighted code, so the colours are left out."""

    def get_context(self, data, accepted_media_type, renderer_context):
        context = super().get_context(data, accepted_media_type, renderer_context)
        context["code_style"] = None
        return context
