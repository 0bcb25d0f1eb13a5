"""Token stores, and the table rules a request is turned into (seeds, seat rotations)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.rules import PRESETS
from referee_service.auth import (
    BotIdentity,
    EnvTokenStore,
    FileTokenStore,
    StaticTokenStore,
    bearer_token,
    load_token_store,
    organizer_token_ok,
    token_digest,
)
from referee_service.spec import SpecError, json_depth, table_spec

HOUSE = frozenset({"random", "greedy", "heuristic"})


def test_file_store_accepts_tokens_and_hashes_and_skips_revoked(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"bots": [
        {"bot_id": "b1", "name": "One", "token": "secret-1"},
        {"bot_id": "b2", "token_sha256": token_digest("secret-2")},
        {"bot_id": "b3", "token": "secret-3", "revoked": True},
    ]}))
    store = FileTokenStore(path)
    assert store.authenticate_bot("secret-1") == BotIdentity("b1", "One")
    assert store.authenticate_bot("secret-2") == BotIdentity("b2", "b2")
    assert store.authenticate_bot("secret-3") is None
    assert store.authenticate_bot("") is None
    # revoking in the file takes effect without a restart
    path.write_text(json.dumps({"bots": [{"bot_id": "b1", "token": "secret-1",
                                          "revoked": True}]}))
    os.utime(path, (1, 1))
    assert store.authenticate_bot("secret-1") is None


@pytest.mark.parametrize("content, words", [
    ("{", "not valid JSON"),
    ('{"bots": 3}', "must be an object with a 'bots' list"),
    ('{"bots": [{"token": "x"}]}', "bot entry 1: missing bot_id"),
    ('{"bots": [{"bot_id": "a"}]}', "needs token or token_sha256"),
    ('{"bots": [{"bot_id": "a", "token_sha256": "zz"}]}', "64 hex digits"),
])
def test_broken_token_files_are_named(tmp_path: Path, content: str, words: str) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=words):
        FileTokenStore(path)


def test_env_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIENLEN_BOT_TOKENS",
                       f"alpha:tok-a, beta:sha256={token_digest('tok-b')}")
    store = load_token_store("env")
    assert store.authenticate_bot("tok-a") == BotIdentity("alpha", "alpha")
    assert store.authenticate_bot("tok-b") == BotIdentity("beta", "beta")
    assert store.authenticate_bot("tok-c") is None
    monkeypatch.setenv("TIENLEN_BOT_TOKENS", "oops")
    with pytest.raises(ValueError, match="entry 1 must be bot_id:token"):
        EnvTokenStore()


def test_load_token_store_by_dotted_path() -> None:
    store = load_token_store("referee_service.auth:StaticTokenStore")
    assert isinstance(store, StaticTokenStore)
    with pytest.raises(ValueError, match="has no attribute Nope"):
        load_token_store("referee_service.auth:Nope")
    with pytest.raises(ValueError, match="use 'env', 'file:PATH' or 'module:Class'"):
        load_token_store("whatever")


def test_bearer_and_organizer_checks() -> None:
    assert bearer_token([("authorization", "Bearer abc")]) == "abc"
    assert bearer_token([("Authorization", b"bearer  xyz ")]) == "xyz"
    assert bearer_token([("authorization", "Basic abc")]) is None
    assert organizer_token_ok("s3cret", "s3cret")
    assert not organizer_token_ok("s3cret", "s3cre")
    assert not organizer_token_ok(None, "anything") and not organizer_token_ok("x", None)


def request(**fields: object) -> org.PlayTableRequest:
    seats = fields.pop("seats", ["house:random", "house:greedy"])
    return org.PlayTableRequest(
        table_id=str(fields.pop("table_id", "t")),
        seats=[org.SeatSpec(house_bot=s[6:]) if str(s).startswith("house:")
               else org.SeatSpec(bot_id=str(s)) for s in seats],  # type: ignore[union-attr]
        **fields)


def test_defaults_and_full_options() -> None:
    spec = table_spec(request(games=3), HOUSE)
    assert (spec.move_time_ms, spec.time_bank_ms, spec.max_strikes) == (1000, 2000, 3)
    assert spec.preset == "south" and spec.total_games == 3 and len(spec.seed) == 16
    assert spec.options == PRESETS["south"].to_dict()  # every option value, resolved
    hue = table_spec(request(games=1, preset="hue", options_json='{"steal_lead": false}'),
                     HOUSE)
    assert hue.options == {**PRESETS["hue"].to_dict(), "steal_lead": False}
    zero_bank = request(games=1)
    zero_bank.time_bank_ms = 0
    assert table_spec(zero_bank, HOUSE).time_bank_ms == 0


def test_games_and_duplicate_sets_conflict() -> None:
    with pytest.raises(SpecError, match="either games or duplicate_sets"):
        table_spec(request(games=3, duplicate_sets=2), HOUSE)


@given(players=st.integers(2, 4), sets=st.integers(1, 5), seed=st.text(max_size=12),
       data=st.data())
def test_duplicate_sets_rotate_every_participant_through_every_seat(
        players: int, sets: int, seed: str, data: st.DataObject) -> None:
    spec = table_spec(request(seats=["house:random"] * players, duplicate_sets=sets,
                              seed=seed or "s"), HOUSE)
    assert spec.total_games == players * sets
    index = data.draw(st.integers(0, spec.total_games - 1))
    seating = spec.seating(index)
    assert sorted(seating) == list(range(players))  # a permutation
    block = index - index % players
    games = range(block, block + players)
    assert {spec.deal_seed(g) for g in games} == {spec.deal_seed(index)}
    for participant in range(players):
        assert sorted(spec.seating(g).index(participant) for g in games) == list(range(players))
    if index >= players:
        assert spec.deal_seed(index) != spec.deal_seed(index - players)


@given(games=st.integers(1, 50), seed=st.text(min_size=1, max_size=12))
def test_independent_games_have_distinct_seeds_and_fixed_seats(games: int, seed: str) -> None:
    spec = table_spec(request(games=games, seed=seed), HOUSE)
    seeds = [spec.deal_seed(i) for i in range(games)]
    assert len(set(seeds)) == games
    assert all(spec.seating(i) == [0, 1] for i in range(games))


def _request(options_json: str) -> org.PlayTableRequest:
    return org.PlayTableRequest(table_id="t", games=1, options_json=options_json,
                                seats=[org.SeatSpec(house_bot="random")] * 2)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30)


@given(st.dictionaries(st.sampled_from(sorted(PRESETS["south"].to_dict())) | st.text(),
                       JSON_VALUES, max_size=4))
def test_any_options_object_is_accepted_or_refused_naming_the_field(options: dict) -> None:
    try:
        spec = table_spec(_request(json.dumps(options)), {"random"})
    except SpecError as exc:
        assert str(exc).startswith("options_json: ")
    else:
        assert json.loads(json.dumps(spec.options)) == spec.options


@given(st.text(alphabet='[]{}",:0123456789 \\tnrue', max_size=300) | st.text(max_size=200))
def test_any_options_text_is_accepted_or_refused_naming_the_field(text: str) -> None:
    try:
        table_spec(_request(text), {"random"})
    except SpecError as exc:
        assert str(exc).startswith("options_json: ")


@pytest.mark.parametrize("text, depth", [
    ("{}", 1), ('{"a": [1, {"b": []}]}', 4), ('{"a": "[[[[{{{{"}', 1),
    ('{"a": "\\"[[["}', 1), ("[" * 20 + "]" * 20, 20), ("", 0),
])
def test_json_depth_counts_brackets_outside_strings(text: str, depth: int) -> None:
    assert json_depth(text) == depth


def test_the_organisers_deal_seeds_deal_the_games_from_first_game_index() -> None:
    spec = table_spec(request(games=5, first_game_index=2, deal_seeds=["a", "b", "c"],
                              resume_leader=1, resume_starting=False), HOUSE)
    assert [spec.deal_seed(i) for i in (2, 3, 4)] == ["a", "b", "c"]
    with pytest.raises(IndexError):
        spec.deal_seed(1)  # already played: not part of this request


@pytest.mark.parametrize(("fields", "message"), [
    ({"games": 3, "deal_seeds": ["secret-a", "secret-b"]},
     r"deal_seeds: 2 given, expected 3 \(one per game to play, games 0..2\)"),
    ({"games": 4, "first_game_index": 1, "deal_seeds": ["secret-a"] * 4},
     r"deal_seeds: 4 given, expected 3 .*games 1..3"),
    ({"games": 2, "deal_seeds": ["secret-a", ""]},
     r"deal_seeds\[1\] \(game 1\): a deal seed is 1-128 printable characters"),
    ({"games": 1, "deal_seeds": ["x" * 129]}, r"deal_seeds\[0\] \(game 0\)"),
    ({"games": 1, "deal_seeds": ["secret\nnewline"]}, r"deal_seeds\[0\] \(game 0\)"),
    ({"duplicate_sets": 2, "deal_seeds": ["secret-a", "secret-b", "secret-b", "secret-b"]},
     r"deal_seeds\[1\] \(game 1\): a duplicate set plays one deal in every rotation, "
     r"so games 0..1 need the same seed"),
    ({"duplicate_sets": 2, "first_game_index": 1, "deal_seeds": ["secret-a", "secret-b", "secret-c"]},
     r"deal_seeds\[2\] \(game 3\).*games 2..3"),
    ({"games": 2, "starting_games": True, "resume_leader": 1, "first_game_index": 1,
      "deal_seeds": ["secret-a"]}, r"resume_leader: every game starts afresh"),
])
def test_bad_deal_seeds_are_refused_naming_the_field_never_a_seed(fields, message) -> None:
    with pytest.raises(SpecError, match=message) as info:
        table_spec(request(**fields), HOUSE)
    assert "secret" not in str(info.value)  # errors end up in public table errors


def test_a_duplicate_set_resumed_mid_set_repeats_its_seed() -> None:
    spec = table_spec(request(duplicate_sets=2, first_game_index=1,
                              deal_seeds=["set0", "set1", "set1"]), HOUSE)
    assert [spec.deal_seed(i) for i in (1, 2, 3)] == ["set0", "set1", "set1"]
    assert spec.every_game_starts


@given(games=st.integers(1, 30), seed=st.text(max_size=12))
def test_drawn_deal_seeds_are_secret_and_not_derived_from_the_table_seed(games: int,
                                                                          seed: str) -> None:
    one, two = (table_spec(request(games=games, seed=seed), HOUSE) for _ in range(2))
    drawn = [*one.deal_seeds, *two.deal_seeds]
    assert len(set(drawn)) == 2 * games  # the same request gives different deals
    assert all(len(s) == 32 and set(s) <= set("0123456789abcdef") for s in drawn)
    assert not one.starting_games and not one.every_game_starts
