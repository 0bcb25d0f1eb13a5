"""The referee's token store plug-in checks tokens against the database."""

import pytest

from referee_service.auth import load_token_store
from tournaments.services.accounts import bot_create, bot_revoke, bot_token_rotate

pytestmark = pytest.mark.django_db


def test_the_referee_loads_the_store_and_authenticates_bots(owner) -> None:
    store = load_token_store("tournaments.token_store:DjangoTokenStore")
    bot, token = bot_create(owner=owner, name="alpha")
    identity = store.authenticate_bot(token)
    assert identity is not None
    assert identity.bot_id == str(bot.pk) and identity.name == "alpha"
    assert store.authenticate_bot("tlb_not-a-token") is None
    assert store.authenticate_bot("") is None


def test_rotated_and_revoked_tokens_stop_working(owner) -> None:
    store = load_token_store("tournaments.token_store:DjangoTokenStore")
    bot, old = bot_create(owner=owner, name="alpha")
    new = bot_token_rotate(bot=bot)
    assert store.authenticate_bot(old) is None
    assert store.authenticate_bot(new).bot_id == str(bot.pk)
    bot_revoke(bot=bot)
    assert store.authenticate_bot(new) is None
