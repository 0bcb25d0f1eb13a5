"""Build realistic tournament data for the web tests and the page benchmark.

Everything is created with `bulk_create`, so a 10,000-game tournament takes seconds, and the
games carry a real replay recorded from the engine (tests/web/data/*.json).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from bots_sdk.fairplay import deal_commitment
from tournaments.models import (
    Bot,
    BotVersion,
    Deal,
    Entrant,
    Game,
    GameSeat,
    Rating,
    RatingChange,
    RatingPool,
    Replay,
    Table,
    TableSeat,
    Tournament,
)

DATA = Path(__file__).resolve().parent / "data"


def load_replay(name: str = "game_4p.json") -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def knockout_rounds(tables: int, *, first: int) -> list[int]:
    """Round of each table in a bracket whose rounds halve: first, first/2, ..., 1."""
    out, size, rnd = [], first, 1
    while len(out) < tables:
        out.extend([rnd] * min(size, tables - len(out)))
        size, rnd = max(1, size // 2), rnd + 1
    return out


def timing_for(replay: dict[str, Any]) -> dict[str, Any]:
    """A referee timing log (tienlen.timing/1) for the replay: move 5 timed out."""
    moves = []
    for i, m in enumerate(replay["moves"]):
        think = 1.0 + (i % 7) * 3.5
        moves.append({"seat": m["seat"], "move_id": i + 1, "elapsed_ms": think + 0.8, "thinking_ms": think,
                      "network_ms": 0.8, "attempts": 1, "fallback": "timeout" if i == 4 else None, "house": False})
    return {"schema": "tienlen.timing/1", "moves": moves}


@dataclass
class World:
    tournament: Tournament
    bots: list[Bot]
    pool: RatingPool
    games: list[Game] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


def make_user(username: str = "owner", *, staff: bool = False, password: str = "pw-for-tests-123"):
    User = get_user_model()
    user = User.objects.create_user(username=username, password=password, is_staff=staff)
    return user


def make_world(
    *,
    bots: int = 4,
    tables: int = 2,
    games_per_table: int = 2,
    replay: dict[str, Any] | None = None,
    fmt: str = Tournament.Format.ROUND_ROBIN,
    status: str = Tournament.Status.FINISHED,
    slug: str = "spring-open",
    games_done_per_table: int | None = None,
    with_ratings: bool = True,
) -> World:
    replay = replay or load_replay()
    players = int(replay["players"])
    blob = zlib.compress(json.dumps(replay, separators=(",", ":")).encode())
    timing_log = timing_for(replay)
    timing_blob = zlib.compress(json.dumps(timing_log).encode())
    per_seat = [{"moves": 0, "thinking_ms": 0.0, "max_ms": 0.0, "fallbacks": 0} for _ in range(players)]
    for t in timing_log["moves"]:
        row = per_seat[t["seat"]]
        row["moves"] += 1
        row["thinking_ms"] += t["thinking_ms"]
        row["max_ms"] = max(row["max_ms"], t["elapsed_ms"])
        row["fallbacks"] += bool(t["fallback"])
    timing_summary = {"moves": len(timing_log["moves"]), "per_seat": per_seat}
    raw = len(json.dumps(replay))
    owner = get_user_model().objects.filter(username="owner").first() or make_user("owner")
    org = get_user_model().objects.filter(username="organiser").first() or make_user("organiser", staff=True)
    bot_objs = Bot.objects.bulk_create(
        [Bot(owner=owner, name=f"{slug}-bot{i}", description=f"Test bot number {i}") for i in range(bots)]
    )
    BotVersion.objects.bulk_create([BotVersion(bot=b, version="1.0") for b in bot_objs])
    pool, _ = RatingPool.objects.get_or_create(preset=replay.get("preset", "south"), seats=players)
    t = Tournament.objects.create(
        name=f"Tournament {slug}", slug=slug, organiser=org, format=fmt, status=status,
        preset=replay.get("preset", "south"), seats_per_table=players, games_per_table=games_per_table,
        pool=pool,
    )
    entrants = Entrant.objects.bulk_create([Entrant(tournament=t, bot=b, seed_rank=i + 1) for i, b in enumerate(bot_objs)])
    done = games_per_table if games_done_per_table is None else games_done_per_table
    rounds = knockout_rounds(tables, first=max(1, bots // players)) if fmt == Tournament.Format.KNOCKOUT else [1] * tables
    table_objs = Table.objects.bulk_create(
        [
            Table(
                tournament=t, round=rounds[k], deal_group=k + 1,
                number=k + 1, games_planned=games_per_table, games_recorded=done,
                status=Table.Status.DONE if done >= games_per_table else Table.Status.RUNNING,
            )
            for k in range(tables)
        ]
    )
    points = replay["result"]["points"]
    order = replay["result"]["finishing_order"]
    places = {s: i + 1 for i, s in enumerate(order)}
    seat_rows, game_rows = [], []
    lineup: dict[int, list[int]] = {}
    # Every game plays the stored replay, so its deal's seed is the replay's (played deals
    # are revealed; the deals of games still to play stay secret, as in a real tournament).
    now = timezone.now()
    deal_seed = replay.get("seed") or f"{slug}-handmade"
    deals = {
        (k, j): Deal(tournament=t, group=k + 1, index=j, seed=deal_seed if j < done else f"{slug}/secret/{k}/{j}",
                     revealed_at=now if j < done else None)
        for k in range(tables) for j in range(games_per_table)
    }
    for deal in deals.values():
        deal.commitment = deal_commitment(t.salt, deal.seed)
    Deal.objects.bulk_create(deals.values())
    for k, table in enumerate(table_objs):
        lineup[table.id] = [(k + j) % bots for j in range(players)]
        for j in range(done):
            game_rows.append(Game(table=table, index=j, deal=deals[(k, j)], players=players,
                                  finishing_order=order, points=points, pool=pool, timing=timing_summary))
    game_objs = Game.objects.bulk_create(game_rows)
    Replay.objects.bulk_create([Replay(game=g, schema="tienlen.replay/1", data=blob, raw_size=raw, timing=timing_blob) for g in game_objs])
    for table in table_objs:
        seat_rows.extend(
            TableSeat(table=table, seat=s, entrant=entrants[b], points=points[s] * done, place=places.get(s, players), advanced=(places.get(s, players) <= max(1, players // 2)) if fmt == Tournament.Format.KNOCKOUT else None)
            for s, b in enumerate(lineup[table.id])
        )
    TableSeat.objects.bulk_create(seat_rows)
    gseats, changes = [], []
    seq = 0
    for g in game_objs:
        for s, b in enumerate(lineup[g.table_id]):
            gseats.append(GameSeat(game=g, seat=s, bot=bot_objs[b], entrant=entrants[b], place=places.get(s, players), points=points[s], strikes=1 if (s == 3 and g.index == 0 and g.table_id == table_objs[0].id) else 0))
            if with_ratings:
                seq += 1
                changes.append(RatingChange(pool=pool, bot=bot_objs[b], game=g, seq=seq, rating_before=1500 + points[s] * 0.0, rating_after=1500 + points[s] * 2.0))
    GameSeat.objects.bulk_create(gseats)
    if with_ratings:
        RatingChange.objects.bulk_create(changes)
        Rating.objects.bulk_create([Rating(pool=pool, bot=b, rating=1500 + 10 * i, games=games_per_table * tables) for i, b in enumerate(bot_objs)])
    Game.objects.filter(id__in=[g.id for g in game_objs]).update(recorded_at=now - timedelta(minutes=1))
    return World(tournament=t, bots=list(bot_objs), pool=pool, games=list(game_objs), tables=list(table_objs))


def make_knockout_between_rounds(*, slug: str = "ko-between") -> World:
    """A running knockout of 8 bots at tables of 4 whose first round is over and whose final
    is not created yet: every table that exists is done, but the tournament is not."""
    return make_world(
        fmt=Tournament.Format.KNOCKOUT, bots=8, tables=2, games_per_table=2,
        status=Tournament.Status.RUNNING, slug=slug, replay=load_replay("game_4p.json"),
    )


def make_world_with_closed_tables(*, slug: str = "closed-tables") -> World:
    """A running round robin with a table of every fate: done, failed, cancelled (each
    after recording some games) and one still playing."""
    w = make_world(
        bots=4, tables=4, games_per_table=4, games_done_per_table=2,
        status=Tournament.Status.RUNNING, slug=slug, replay=load_replay("game_2p_handmade.json"),
    )
    done, failed, cancelled, _running = w.tables
    Table.objects.filter(pk=done.pk).update(status=Table.Status.DONE, games_planned=2)
    Table.objects.filter(pk=failed.pk).update(status=Table.Status.FAILED, last_error="referee unreachable")
    Table.objects.filter(pk=cancelled.pk).update(status=Table.Status.CANCELLED)
    return w
