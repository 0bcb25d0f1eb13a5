from django.apps import AppConfig


class DemoAppConfig(AppConfig):
    """Only here so that Django finds the `run_demo` management command."""

    name = "demo"
    verbose_name = "Demo and process tooling"
