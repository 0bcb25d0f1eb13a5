"""A table played with `live_moves` (a casual table watched live, docs/web.md "Play") streams
one LiveMove per public move to the organiser, as public as a seat's view: the plays and
passes in order, the card counts, never a card still in a hand, never a declined offer, and
never a pending offer in `to_move`. A table played without it (every tournament table)
streams no LiveMove at all."""

from __future__ import annotations

import json

import pytest

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.rules import PRESETS
from referee_service.server import Referee

from .harness import Policy, RawBot, games_of, move, play_table, random_policy
from .test_information_hiding import idx, public_moves


def declining_policy(seed: int) -> Policy:
    play = random_policy(seed)

    def policy(request: gw.MoveRequest, bot: RawBot) -> gw.BotMessage:
        return move(request, None) if request.view.offer else play(request, bot)

    return policy


def _kinds(events) -> set[str]:
    return {e.WhichOneof("event") for e in events}


@pytest.mark.parametrize("preset", sorted(PRESETS))
async def test_live_moves_are_the_public_moves_one_by_one(referee: Referee, preset: str) -> None:
    bots = [RawBot(referee.target, name, policy=declining_policy(n)).start()
            for n, name in enumerate(["alice", "bob"])]
    for bot in bots:
        await bot.connected()
    try:
        events = await play_table(referee.target, table_id=f"live-{preset}", preset=preset, games=3,
                                  seats=["alice", "house:greedy", "bob", "house:heuristic"],
                                  seed=f"live-{preset}", live_moves=True)
        # the same deals without live_moves: not one LiveMove
        quiet = await play_table(referee.target, table_id=f"quiet-{preset}", preset=preset, games=3,
                                 seats=["alice", "house:greedy", "bob", "house:heuristic"],
                                 seed=f"live-{preset}")
    finally:
        for bot in bots:
            await bot.close()
    assert "move" in _kinds(events)
    assert _kinds(quiet) == {"started", "game", "result"}
    records = {r.game_index: r for r in games_of(events)}
    position = {id(e): i for i, e in enumerate(events)}
    for index, record in records.items():
        replay = json.loads(record.replay_json)
        live = [e for e in events if e.WhichOneof("event") == "move" and e.move.game_index == index]
        # every live move of the game comes before the game's record: move by move
        assert all(position[id(e)] < position[id(next(x for x in events if x.WhichOneof("event") == "game"
                                                          and x.game.game_index == index))] for e in live)
        public = public_moves(replay)
        assert [e.move.number for e in live] == list(range(1, len(public) + 1))
        counts = [len(h) for h in replay["hands"]]
        for event, expected in zip([e.move for e in live], public, strict=True):
            assert event.seat == expected["seat"]
            assert event.passed == bool(expected.get("pass"))
            assert sorted(event.cards) == sorted(idx(expected.get("cards", [])))
            assert event.offer == expected.get("offer", "")
            counts[event.seat] -= len(event.cards)
            assert list(event.card_counts) == counts
            # no card but the ones played so far (and the play to beat, played too)
            played = {c for m in public[:event.number] for c in idx(m.get("cards", []))}
            assert set(event.cards) | set(event.table_cards) <= played
            if event.HasField("to_move"):
                assert 0 <= event.to_move < 4
        last = live[-1].move if live else None
        if last is not None:
            assert not last.HasField("to_move")  # the game is over after its last move
    declined = sum(1 for r in records.values() for m in json.loads(r.replay_json)["moves"]
                   if m.get("pass") and m.get("offer"))
    live_total = sum(1 for e in events if e.WhichOneof("event") == "move")
    moves_total = sum(len(json.loads(r.replay_json)["moves"]) for r in records.values())
    assert live_total == moves_total - declined


async def test_to_move_never_shows_a_pending_offer(referee: Referee) -> None:
    """danang offers steals of the lead (often before a game's first move, which then has no
    LiveMove before it) and out-of-turn chops. While an offer is pending, the public
    `to_move` is the seat the turn goes to once it is declined: at every position of the
    recorded games where the offers were declined, it names the seat that moved next
    publicly, and the LiveMoves' to_move never differs from it."""
    from bots_sdk.rules import Game
    from referee_service.table import _public_to_move

    names = ["alice", "bob", "carol", "dave"]
    bots = [RawBot(referee.target, name, policy=declining_policy(n)).start() for n, name in enumerate(names)]
    for bot in bots:
        await bot.connected()
    checked = 0
    try:
        for attempt in range(10):
            events = await play_table(referee.target, table_id=f"offers-{attempt}", preset="danang",
                                      games=8, seats=names, live_moves=True)
            for record in games_of(events):
                replay = json.loads(record.replay_json)
                live = [e.move for e in events if e.WhichOneof("event") == "move"
                        and e.move.game_index == record.game_index]
                game = Game(replay["hands"], preset="danang", starting=replay["starting"],
                            leader=replay.get("leader"), seed=replay.get("seed"))
                moves, public = replay["moves"], 0
                for i, m in enumerate(moves):
                    if game.offer is not None and m.get("pass") and m.get("offer"):
                        nxt = next(x for x in moves[i:] if not (x.get("pass") and x.get("offer")))
                        assert _public_to_move(game) == nxt["seat"]
                        if public:  # the LiveMove before this offer said the same
                            assert live[public - 1].to_move == nxt["seat"]
                        checked += 1
                    if m.get("pass"):
                        game.pass_turn(seat=m["seat"])
                    else:
                        game.play(m["cards"], seat=m["seat"])
                    public += not (m.get("pass") and m.get("offer"))
            if checked >= 3:
                break
    finally:
        for bot in bots:
            await bot.close()
    assert checked >= 3, "too few offers were declined in 10 tables"
