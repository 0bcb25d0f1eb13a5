"""A bot only ever learns what its seat may see: every message of whole games is checked."""

from __future__ import annotations

import json

import pytest

from bots_sdk.cards import parse_cards
from bots_sdk.rules import PRESETS
from referee_service.server import Referee

from .harness import RawBot, games_of, play_table, start_bots


def idx(names: list[str]) -> list[int]:
    return [card.index for card in parse_cards(names)]


def public_moves(replay: dict) -> list[dict]:
    """The replay's moves as a seat sees them: declined offers stay private."""
    return [m for m in replay["moves"] if not (m.get("pass") and m.get("offer"))]


def as_dict(move: object) -> dict:
    if getattr(move, "pass"):
        return {"seat": move.seat, "pass": True}
    return {"seat": move.seat, "cards": sorted(move.cards)}


def normal(move: dict) -> dict:
    if move.get("pass"):
        return {"seat": move["seat"], "pass": True}
    return {"seat": move["seat"], "cards": sorted(idx(move["cards"]))}


def cards_in(message: object) -> set[int]:
    """Every card-valued field anywhere in a message."""
    found: set[int] = set()
    for descriptor, value in message.ListFields():
        if descriptor.message_type is not None:
            items = value if descriptor.is_repeated else [value]
            for item in items:
                found |= cards_in(item)
        elif descriptor.name in {"cards", "hand", "fallback_cards"}:
            found |= set(value)
    return found


def check_bot(bot: RawBot, replays: dict[tuple[str, int], dict],
              seats: dict[tuple[str, int], int], seeds: list[str]) -> int:
    checked = 0
    current: tuple[str, int] | None = None
    for message in bot.received:
        data = message.SerializeToString()
        for seed in seeds:
            assert seed.encode() not in data, "a deal seed reached a bot"
        kind = message.WhichOneof("body")
        body = getattr(message, kind)
        if kind == "game_start":
            current = (body.table_id, body.game_index)
            replay = replays[current]
            assert body.seat == seats[current]
            assert sorted(body.hand) == sorted(idx(replay["hands"][body.seat]))
        if kind in {"move_request", "strike", "game_end", "move_rejected", "move_accepted"}:
            assert (body.table_id, body.game_index) == current
        if current is None:
            continue
        replay = replays[current]
        seat = seats[current]
        own = set(idx(replay["hands"][seat]))
        played = {c for m in replay["moves"] for c in idx(m.get("cards", []))}
        assert cards_in(message) <= own | played
        if kind == "move_request":
            view = body.view
            assert view.seat == seat and view.to_move == seat
            history = [as_dict(m) for m in view.history]
            assert history == [normal(m) for m in public_moves(replay)[:len(history)]]
            mine = {c for m in history if m["seat"] == seat for c in m.get("cards", [])}
            assert set(view.hand) == own - mine
            for play in view.legal_plays:
                assert set(play.cards) <= set(view.hand)
            if view.HasField("table"):
                last_play = next(m for m in reversed(history) if "cards" in m)
                assert sorted(view.table.cards) == last_play["cards"]
            checked += 1
        if kind == "game_end":
            for payment in body.result.payments:
                assert not any(ch.isdigit() for ch in payment.reason)
    return checked


@pytest.mark.parametrize("players", [2, 4])
@pytest.mark.parametrize("preset", sorted(PRESETS))
async def test_no_message_to_a_bot_reveals_another_seat(referee: Referee, preset: str,
                                                        players: int) -> None:
    names = ["alice", "bob", "carol", "dave"][:players]
    bots = await start_bots(referee.target, names)
    seeds = []
    replays: dict[tuple[str, int], dict] = {}
    seat_of: dict[str, dict[tuple[str, int], int]] = {n: {} for n in names}
    for table_id, fields in (("plain", {"games": 3}), ("dup", {"duplicate_sets": 1})):
        seed = f"hide-{preset}-{players}-{table_id}"
        events = await play_table(referee.target, table_id=table_id, seats=names,
                                  preset=preset, seed=seed, **fields)
        for record in games_of(events):
            key = (table_id, record.game_index)
            replays[key] = json.loads(record.replay_json)
            seeds.append(record.seed)
            for seat, participant in enumerate(record.seat_participants):
                seat_of[names[participant]][key] = seat
    total = 0
    for bot in bots:
        total += check_bot(bot, replays, seat_of[bot.bot_id], seeds)
        await bot.close()
    assert total >= 20
