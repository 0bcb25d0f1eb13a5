"""Fixtures for the tournaments tests: users, bots, tournaments and finished games."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission, User

from bots_sdk.protocol.tienlen.v1 import game_pb2 as pb
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.wire import game_timing
from tournaments.play.referee import FinishedGame
from tournaments.services.accounts import bot_create
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_schedule,
)

POINTS_BY_PLACE = {2: [2, -2], 3: [2, 0, -2], 4: [2, 1, -1, -2]}


def make_result(index: int, order: list[int], seat_participants: list[int] | None = None,
                instant_winner: int | None = None, seed: str | None = None) -> FinishedGame:
    """A finished game as the referee streams it: `order` is the finishing order of seats.

    Its hands are made up, so by default it names no deal seed (the recorder checks a
    reported seed against the deal committed for the game); pass the deal's `seed` to
    test that check."""
    n = len(order)
    points = [0] * n
    for place, seat in enumerate(order):
        points[seat] = POINTS_BY_PLACE[n][place]
    if instant_winner is not None:
        points = [-4] * n
        points[instant_winner] = 4 * (n - 1)
    replay = {
        "schema": "tienlen.replay/1",
        "preset": "south",
        "options": {},
        "players": n,
        "seed": seed,
        "starting": True,
        "leader": None,
        "hands": [["3S"] * 13 for _ in range(n)],
        "moves": [{"seat": s, "cards": ["3S"]} for s in range(n)] * 10,
        "result": {
            "finishing_order": order,
            "points": points,
            "instant_winner": instant_winner,
            "frozen": [],
            "payments": [],
            "next_leader": order[0],
            "next_starting": False,
        },
    }
    timing = {"schema": "tienlen.timing/1", "moves": [{"seat": 0, "elapsed_ms": 1.5, "fallback": None}]}
    return finished_game(index, replay, seat_participants=seat_participants, timing=timing, seed=seed or "")


def finished_game(index: int, replay: dict, *, seat_participants: list[int] | None = None,
                  timing: dict | None = None, seed: str = "", forfeited: list[int] = ()) -> FinishedGame:
    """What the worker records for a GameRecord the referee streams with this replay: the
    record is built as the referee builds it (its typed fields from the replay and the
    timing log, with the referee's own functions) and read by the worker's own path."""
    result = replay["result"]
    timing = timing or {"schema": "tienlen.timing/1", "moves": []}
    record = org.GameRecord(
        game_index=index,
        seat_participants=seat_participants if seat_participants is not None else list(range(replay["players"])),
        replay_json=json.dumps(replay, separators=(",", ":")),
        timing_json=json.dumps(timing, separators=(",", ":")),
        forfeited=forfeited,
        result=pb.GameResult(finishing_order=result["finishing_order"], points=result["points"],
                             instant_winner=result.get("instant_winner"), tied=result.get("tied") or ()),
        seed=seed,
        replay_schema=replay.get("schema") or "",
        timing=game_timing(timing["moves"], replay["players"]),
    )
    return FinishedGame.from_record(record)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def organiser(db) -> User:
    user = User.objects.create_user("org", password="pw-org-12345")
    user.user_permissions.add(Permission.objects.get(codename="organise_tournaments"))
    return User.objects.get(pk=user.pk)


@pytest.fixture
def owner(db) -> User:
    return User.objects.create_user("owner", password="pw-owner-12345")


@pytest.fixture
def other_owner(db) -> User:
    return User.objects.create_user("other", password="pw-other-12345")


@pytest.fixture
def bots(owner, other_owner):
    """Eight bots of eight owners (`owner` has bot0, `other_owner` bot1): a field the owner
    rule does not constrain. Tests of the rule build their own owners."""
    made = []
    for i in range(8):
        user = owner if i == 0 else other_owner if i == 1 else User.objects.create_user(f"owner{i}")
        bot, _ = bot_create(owner=user, name=f"bot{i}")
        made.append(bot)
    return made


HOUSE_KINDS = ("greedy", "heuristic", "random")


@pytest.fixture
def house_bots(db):
    """Eight house bots (run by the referee: isolated, tournaments.isolation), so field
    duplicates share each deal between the tables of a round: the field for tests of
    what happens across the tables of one deal group. Remote bots (`bots`) never share."""
    staff = User.objects.create_user("house-staff", is_staff=True)
    return [bot_create(owner=staff, name=f"house{i}", house_bot=HOUSE_KINDS[i % 3])[0] for i in range(8)]


def running_round_robin(organiser, bots, **fields):
    """A started round robin with tables created (no Celery involved)."""
    from django.db import transaction

    tournament = tournament_create(
        organiser=organiser, name=fields.pop("name", "Spring cup"), format="round_robin", **fields
    )
    for bot in bots:
        tournament_entrant_add(tournament=tournament, bot=bot)
    with transaction.atomic():
        tournament.status = "scheduled"
        tournament.save(update_fields=["status"])
    tournament_schedule(tournament_id=tournament.pk)
    tournament.refresh_from_db()
    return tournament
