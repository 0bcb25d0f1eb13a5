"""Readers for the files under docker/, shared by the deployment tests."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
CODE_DIRS = ("bots_sdk", "referee_service", "tournaments", "platform")


@cache
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yml").read_text())


def entrypoint_roles() -> set[str]:
    text = (DOCKER / "entrypoint.sh").read_text()
    return set(re.findall(r"^  ([a-z]+)\)$", text, re.M))


def env_example() -> dict[str, str]:
    values: dict[str, str] = {}
    for line in (DOCKER / "env.example").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            values[name] = value
    return values


def interpolated_variables() -> set[str]:
    return set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", (DOCKER / "compose.yml").read_text()))


@cache
def _sources() -> tuple[str, ...]:
    texts = [(DOCKER / "entrypoint.sh").read_text(), (DOCKER / "healthcheck.py").read_text()]
    for name in CODE_DIRS:
        texts.extend(p.read_text() for p in (ROOT / name).rglob("*.py"))
    return tuple(texts)


def python_sources_mentioning(name: str) -> bool:
    """True when the code or the image's scripts read the variable `name` somewhere."""
    pattern = re.compile(r"[\"'${]" + re.escape(name) + r"[\"'}:]")
    return any(pattern.search(text) for text in _sources())
