"""Move notes (docs/protocol.md, `Move.note`): the referee keeps each applied answer's note
in the game's replay record, sends no note to any seat, and refuses an oversize note with
NOTE_TOO_LONG without counting it against the bot."""

from __future__ import annotations

import json

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.rules import replay_game
from bots_sdk.rules.notes import MAX_NOTE_BYTES
from referee_service.server import Referee

from .harness import Policy, RawBot, games_of, play_table, random_policy


def noting(seed: int, tag: str) -> Policy:
    """Random legal moves, each with a note no other message could contain by chance."""
    play = random_policy(seed)

    def policy(request: gw.MoveRequest, bot: RawBot) -> gw.BotMessage:
        answer = play(request, bot)
        answer.move.note = f"secret {tag} {request.move_id} ắ"
        return answer

    return policy


async def test_notes_reach_the_record_and_no_seat(referee: Referee) -> None:
    names = ["alice", "bob", "carol", "dave"]
    bots = [RawBot(referee.target, name, policy=noting(n, name)).start()
            for n, name in enumerate(names)]
    for bot in bots:
        await bot.connected()
    records = []
    for table_id, fields in (("plain", {"games": 2}), ("dup", {"duplicate_sets": 1})):
        events = await play_table(referee.target, table_id=table_id, seats=names,
                                  preset="south_extended", seed=f"notes-{table_id}", **fields)
        records += games_of(events)
    for bot in bots:
        await bot.close()
    noted = 0
    for record in records:
        replay = json.loads(record.replay_json)
        replay_game(replay)  # a record with notes re-simulates as before
        assert "secret" not in record.timing_json  # the timing log is public on the platform
        for move in replay["moves"]:
            name = names[record.seat_participants[move["seat"]]]
            assert move["note"].startswith(f"secret {name} ")
            noted += 1
    assert noted >= 100
    # On the wire: no message to any bot carries a note, its own or another seat's.
    for bot in bots:
        assert bot.received
        for message in bot.received:
            assert b"secret" not in message.SerializeToString(), message


async def test_an_oversize_note_is_refused_without_counting_an_attempt(referee: Referee) -> None:
    longest = "ắ" * (MAX_NOTE_BYTES // 3) + "x" * (MAX_NOTE_BYTES % 3)  # exactly 256 bytes
    assert len(longest.encode()) == MAX_NOTE_BYTES
    play = random_policy(3)
    first_answers: set[int] = set()

    def policy(request: gw.MoveRequest, bot: RawBot) -> gw.BotMessage:
        answer = play(request, bot)
        if request.move_id not in first_answers:
            first_answers.add(request.move_id)
            answer.move.note = longest + "!"  # one byte too many
        else:
            answer.move.note = longest
        return answer

    bot = await RawBot(referee.target, "alice", policy=policy).start().connected()
    events = await play_table(referee.target, table_id="t", games=1, seed="long-notes",
                              seats=["alice", "house:random", "house:random"])
    await bot.close()
    rejected = bot.of_kind("move_rejected")
    assert rejected and len(rejected) == len(first_answers)
    for r in rejected:
        assert r.code == gw.MOVE_ERROR_CODE_NOTE_TOO_LONG
        assert r.reason == f"note is {MAX_NOTE_BYTES + 1} bytes of UTF-8; at most {MAX_NOTE_BYTES} are kept"
        assert r.attempts_left == 3  # not an attempt: as many left as before
    assert bot.of_kind("strike") == []
    (record,) = games_of(events)
    replay = json.loads(record.replay_json)
    mine = [m for m in replay["moves"] if m["seat"] == list(record.seat_participants).index(0)]
    assert mine and all(m["note"] == longest for m in mine)
    others = [m for m in replay["moves"] if m not in mine]
    assert others and all("note" not in m for m in others)  # house bots say nothing
    assert all(m["attempts"] == 1 for m in json.loads(record.timing_json)["moves"])
