"""Starter project for `tienlen-bot new NAME`: a bot, its test and a README.

The files are plain templates next to this module (`*.tmpl`, `{{name}}` placeholders) so
they read like the code they produce.
"""

from __future__ import annotations

import keyword
import re
from importlib import resources
from pathlib import Path

__all__ = ["TEMPLATES", "class_name_for", "write_project"]

#: template file -> file written in the new project
TEMPLATES = {
    "bot.py.tmpl": "bot.py",
    "test_bot.py.tmpl": "test_bot.py",
    "README.md.tmpl": "README.md",
    "pytest.ini.tmpl": "pytest.ini",
}


def class_name_for(name: str) -> str:
    """`my-first_bot` -> `MyFirstBot` (a valid identifier, ending in Bot)."""
    words = [w for w in re.split(r"[^0-9A-Za-z]+", name) if w]
    base = "".join(w[:1].upper() + w[1:] for w in words) or "My"
    if base[0].isdigit():
        base = "Bot" + base
    if not base.endswith("Bot"):
        base += "Bot"
    if keyword.iskeyword(base):
        base += "_"
    return base


def write_project(directory: Path, *, force: bool = False) -> list[Path]:
    """Write the starter files into `directory`; refuse to overwrite unless `force`."""
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"{str(directory)!r} exists and is not a directory")
    if directory.exists() and any(directory.iterdir()) and not force:
        raise ValueError(f"directory {str(directory)!r} is not empty (use --force to write into it)")
    name = directory.resolve().name
    values = {"name": name, "class_name": class_name_for(name)}
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    pkg = resources.files(__name__)
    for template, target in TEMPLATES.items():
        text = pkg.joinpath(template).read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        path = directory / target
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
