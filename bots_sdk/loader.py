"""Find a bot class from what a user typed: a file, `file.py:Class`, `module:Class`, or
the name of an example bot.

Every failure becomes a `BotLoadError` whose message fits on one line, because the CLI
shows it instead of a traceback: bot authors should see "no Bot subclass in mybot.py",
not forty lines of importlib internals.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

from bots_sdk.bot import Bot

__all__ = ["BotLoadError", "describe_spec", "load_bot_class"]


class BotLoadError(Exception):
    """The bot named on the command line cannot be loaded; the message says why."""


def load_bot_class(spec: str) -> type[Bot]:
    """Resolve `spec` to a Bot subclass.

    Accepted: an example name (`random`, `greedy`, `heuristic`); `path/to/bot.py` (the
    file's only Bot subclass); `path/to/bot.py:ClassName`; `package.module:ClassName`;
    `package.module` (its only Bot subclass)."""
    spec = spec.strip()
    if not spec:
        raise BotLoadError("empty bot name")
    from bots_sdk.examples import EXAMPLES

    if spec in EXAMPLES:
        return EXAMPLES[spec]
    target, _, class_name = spec.partition(":")
    if target.endswith(".py") or "/" in target or "\\" in target:
        module = _load_file(Path(target))
        where = target
    else:
        module = _import_module(target, spec)
        where = target
    return _pick_class(module, class_name or None, where)


def describe_spec(spec: str) -> str:
    """A short label for tables and logs: the example name or the class name."""
    from bots_sdk.examples import EXAMPLES

    if spec in EXAMPLES:
        return spec
    return load_bot_class(spec).display_name()


def _load_file(path: Path) -> ModuleType:
    if not path.exists():
        raise BotLoadError(f"bot file {str(path)!r} not found")
    if path.is_dir():
        raise BotLoadError(f"{str(path)!r} is a directory; give the bot's .py file")
    resolved = path.resolve()
    digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:8]
    mod_name = f"tienlen_bot_{resolved.stem}_{digest}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, resolved)
    if spec is None or spec.loader is None:
        raise BotLoadError(f"cannot load {str(path)!r} as Python")
    module = importlib.util.module_from_spec(spec)
    # Let the bot import helper modules that sit next to it.
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        del sys.modules[mod_name]
        raise BotLoadError(f"{path}: syntax error at line {exc.lineno}: {exc.msg}") from exc
    except BaseException as exc:  # the bot's own import-time code may raise anything
        del sys.modules[mod_name]
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise BotLoadError(f"{path}: failed to import: {_one_line(exc)}") from exc
    return module


def _import_module(name: str, spec: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            from bots_sdk.examples import EXAMPLES

            known = ", ".join(sorted(EXAMPLES))
            raise BotLoadError(
                f"{spec!r} is not a bot file, an importable module or an example bot ({known})"
            ) from exc
        raise BotLoadError(f"{name}: failed to import: {_one_line(exc)}") from exc
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise BotLoadError(f"{name}: failed to import: {_one_line(exc)}") from exc


def _pick_class(module: ModuleType, class_name: str | None, where: str) -> type[Bot]:
    if class_name:
        obj = getattr(module, class_name, None)
        if obj is None:
            found = ", ".join(c.__name__ for c in _bot_classes(module)) or "none"
            raise BotLoadError(f"no class {class_name!r} in {where} (Bot subclasses there: {found})")
        if not (inspect.isclass(obj) and issubclass(obj, Bot)):
            raise BotLoadError(f"{where}:{class_name} is not a subclass of bots_sdk.Bot")
        return obj
    classes = _bot_classes(module)
    if not classes:
        raise BotLoadError(
            f"no Bot subclass in {where} (write `class MyBot(Bot):` with `from bots_sdk import Bot`)"
        )
    if len(classes) > 1:
        names = ", ".join(c.__name__ for c in classes)
        raise BotLoadError(f"{where} has several Bot subclasses ({names}); pick one with {where}:Name")
    return classes[0]


def _bot_classes(module: ModuleType) -> list[type[Bot]]:
    return [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Bot)
        and obj is not Bot
        and obj.__module__ == module.__name__
    ]


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
