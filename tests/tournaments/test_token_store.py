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


def test_a_burst_of_tokens_is_checked_in_two_queries_each_answered_in_order(
        owner, django_assert_num_queries) -> None:
    """The referee checks the tokens of a burst of connecting bots together
    (referee_service.admission.TokenChecks): one answer per token, in order, whatever
    their number, and a revoked one still refused."""
    store = load_token_store("tournaments.token_store:DjangoTokenStore")
    bots = [bot_create(owner=owner, name=f"burst-{i}") for i in range(30)]
    revoked, revoked_token = bots[3]
    bot_revoke(bot=revoked)
    tokens = [token for _, token in bots] + ["tlb_not-a-token", "", "x" * 500]
    with django_assert_num_queries(2):
        found = store.authenticate_bots(tokens)
    assert len(found) == len(tokens)
    for (bot, token), identity in zip(bots, found, strict=False):
        if token == revoked_token:
            assert identity is None
        else:
            assert identity is not None and identity.bot_id == str(bot.pk)
    assert found[-3:] == [None, None, None]
