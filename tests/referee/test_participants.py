"""Participant keys (referee_service.participants) are the one way seats are named in
text: what the worker sends, the referee reports and the CLI reads round-trip, and a key
cannot make a house bot of a registered bot or the reverse."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from referee_service.organizer_client import seat_spec
from referee_service.participants import (
    ParticipantKey,
    participant_bot_id,
    participant_key,
    participant_parse,
)
from referee_service.spec import ParticipantSpec

names = st.text(min_size=1, max_size=20)


@given(names)
def test_a_registered_bots_key_round_trips(bot_id: str) -> None:
    key = participant_key(bot_id=bot_id)
    assert participant_parse(key) == ParticipantKey(bot_id=bot_id)
    assert participant_bot_id(key) == bot_id
    assert seat_spec(key).bot_id == bot_id and not seat_spec(key).house_bot
    assert ParticipantSpec(bot_id=bot_id).label == key


@given(names)
def test_a_house_bots_key_round_trips_and_names_no_registered_bot(name: str) -> None:
    key = participant_key(house_bot=name)
    assert participant_parse(key) == ParticipantKey(house_bot=name) and participant_parse(key).house
    assert participant_bot_id(key) is None
    assert seat_spec(key).house_bot == name and not seat_spec(key).bot_id
    assert ParticipantSpec(house=name).label == key


def test_a_bare_id_is_a_registered_bot_and_a_bot_id_that_looks_like_a_key_stays_one() -> None:
    assert participant_parse("12") == ParticipantKey(bot_id="12")
    # A bot whose id starts with "house:" is still that bot, never a house bot.
    assert participant_parse(participant_key(bot_id="house:random")) == ParticipantKey(bot_id="house:random")
