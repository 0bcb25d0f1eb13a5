"""A bot only ever learns what its seat may see: every message of whole games is checked."""

from __future__ import annotations

import asyncio
import json

import pytest

from bots_sdk.cards import parse_cards
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.rules import PRESETS
from referee_service.server import Referee
from referee_service.table import MOVE_ID_SPACING

from .harness import Policy, RawBot, games_of, move, play_table, random_policy, start_bots


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
        seeds.append(events[0].started.seed)  # the house bots' seed stays with the organiser too
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


def declining_policy(seed: int) -> Policy:
    """Random legal moves, but every offer (a steal, an out-of-turn chop) is declined."""
    play = random_policy(seed)

    def policy(request: gw.MoveRequest, bot: RawBot) -> gw.BotMessage:
        return move(request, None) if request.view.offer else play(request, bot)

    return policy


async def test_move_ids_say_nothing_about_other_seats_or_tables(referee: Referee) -> None:
    """A declined offer is hidden from the other seats' views (it would reveal a bomb);
    the move ids must not give it away either, nor any other seat's or table's requests:
    each seat's ids count its own requests at its table, 1, 2, 3, ..., after a random
    offset of its own (a multiple of MOVE_ID_SPACING)."""
    names = ["alice", "bob", "carol", "dave"]
    bots = [RawBot(referee.target, name, policy=declining_policy(n)).start()
            for n, name in enumerate(names)]
    for bot in bots:
        await bot.connected()
    declined_between: list[tuple[str, int]] = []  # (table, seat) of offers declined
    for attempt in range(8):  # deals are random: play until offers were declined
        tables = [f"ids{attempt}-{k}" for k in range(2)]
        # two tables at once with the same four bots in other seat orders
        runs = await asyncio.gather(*[
            play_table(referee.target, table_id=table, preset="danang", games=6,
                       seats=names[k:] + names[:k])
            for k, table in enumerate(tables)])
        for table, events in zip(tables, runs, strict=True):
            for record in games_of(events):
                replay = json.loads(record.replay_json)
                declined_between += [(table, m["seat"]) for m in replay["moves"]
                                     if m.get("pass") and m.get("offer")]
        if declined_between:
            break
    assert declined_between, "no offer was declined in 8 rounds of tables"
    offsets = set()
    pairs = 0
    for bot in bots:
        ids: dict[str, list[int]] = {}
        for request in bot.of_kind("move_request"):
            ids.setdefault(request.table_id, []).append(request.move_id)
        for table, seen in ids.items():
            offset = seen[0] - 1
            assert offset % MOVE_ID_SPACING == 0 and offset + len(seen) < 2**53
            assert seen == list(range(offset + 1, offset + len(seen) + 1)), (bot.bot_id, table)
            offsets.add(offset)
            pairs += 1
        await bot.close()
    assert len(offsets) == pairs >= 8  # drawn afresh for every seat of every table
