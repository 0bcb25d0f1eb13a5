"""The JSON API (DRF, OpenAPI schema by drf-spectacular)."""
