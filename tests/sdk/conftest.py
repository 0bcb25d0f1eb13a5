"""Fixtures for the SDK tests: bot files written to a temp dir, as an author would."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def bot_file(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a bot source file (dedented) and return its path."""

    def write(source: str, name: str = "mybot.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return path

    return write
