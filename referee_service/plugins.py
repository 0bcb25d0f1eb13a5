"""The `module:Class` plug-ins of the referee's command line (`--token-store`, `--pool`):
imported, built without arguments and checked for the methods the referee calls, with a
ValueError naming the flag for each way that can fail. Both flags load through here."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

__all__ = ["plugin_load"]


def plugin_load(flag: str, spec: str, methods: Sequence[str]) -> object:
    """The instance of the class `spec` ("module:Class") names, having every one of
    `methods`; ValueError ("{flag} {spec!r}: ...") when it cannot be loaded."""
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"{flag} {spec!r}: cannot import {module_name}: {exc}") from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise ValueError(f"{flag} {spec!r}: {module_name} has no attribute {attr}")
    plugin = cls()
    for method in methods:
        if not callable(getattr(plugin, method, None)):
            raise ValueError(f"{flag} {spec!r}: {attr} has no {method}() method")
    return plugin
