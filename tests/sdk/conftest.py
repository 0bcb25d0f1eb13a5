"""Fixtures for the SDK tests: bot files written to a temp dir, as an author would."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from referee_service.server import Referee


@pytest.fixture
def bot_file(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write a bot source file (dedented) and return its path."""

    def write(source: str, name: str = "mybot.py") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return path

    return write


@pytest.fixture
async def referee() -> AsyncIterator[Referee]:
    """A real referee on a free loopback port, knowing the test bot's token."""
    from referee_service.auth import BotIdentity, StaticTokenStore
    from referee_service.server import running_referee

    from .helpers import ORGANIZER, TOKEN

    store = StaticTokenStore({TOKEN: BotIdentity("sdk-bot", "SDK bot")})
    async with running_referee(store, organizer_token=ORGANIZER) as ref:
        yield ref
