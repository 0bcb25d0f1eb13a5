"""Fixtures of the referee tests: a real server on a free loopback port."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from referee_service.auth import BotIdentity, StaticTokenStore
from referee_service.server import Referee, running_referee

from .harness import BOTS, ORGANIZER_TOKEN, token_of


@pytest.fixture
def token_store() -> StaticTokenStore:
    return StaticTokenStore({token_of(b): BotIdentity(b, b.title()) for b in BOTS})


@pytest.fixture
async def referee(token_store: StaticTokenStore) -> AsyncIterator[Referee]:
    async with running_referee(token_store, organizer_token=ORGANIZER_TOKEN) as ref:
        yield ref
