"""Ladder seasons: at a season's end its standings are frozen (later games never change
them) and archived on the site and in the API, and the next season begins with the
ladder's rating rule applied, a step of the pool's rating sequence that the recompute
replays exactly."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone
from rest_framework.test import APIClient

from tests.tournaments.conftest import make_result
from tournaments.models import START_RATING, Rating, Season, Table, Tournament
from tournaments.services.ladder import ladder_tick
from tournaments.services.ratings import ratings_recompute
from tournaments.services.recording import table_game_record
from tournaments.services.seasons import seasons_roll
from tournaments.services.tables import table_complete
from tournaments.services.tournaments import (
    tournament_create,
    tournament_entrant_add,
    tournament_update,
)

pytestmark = pytest.mark.django_db


def season_ladder(organiser, house_bots, **fields) -> Tournament:
    ladder = tournament_create(
        organiser=organiser, name="Season ladder", slug="season-ladder", format="ladder", seats_per_table=4,
        games_per_table=2, ladder_tables_per_tick=2, allow_same_owner=True, season_days=7, **fields,
    )
    for bot in house_bots:
        tournament_entrant_add(tournament=ladder, bot=bot)
    start = timezone.now() - timedelta(days=8)
    Tournament.objects.filter(pk=ladder.pk).update(status=Tournament.Status.RUNNING, started_at=start)
    ladder.refresh_from_db()
    return ladder


def tick(ladder: Tournament, now) -> list[Table]:
    """What the beat's tick does for one ladder (tournaments.services.tick.tick_run)."""
    season = seasons_roll(tournament=ladder, now=now)
    ids = ladder_tick(tournament=ladder, connected=None, rng=random.Random(3), season=season.number if season else None)
    return list(Table.objects.filter(pk__in=ids).order_by("number"))


def play(table: Table, *, done: bool = True) -> None:
    for i in range(table.games_planned):
        table_game_record(table_id=table.pk, result=make_result(i, [0, 1, 2, 3]))
    if done:
        table_complete(table_id=table.pk)


def ratings(ladder: Tournament) -> dict[int, float]:
    return dict(Rating.objects.filter(pool=ladder.pool).values_list("bot_id", "rating"))


def test_a_season_ends_frozen_and_the_next_starts_with_ratings_regressed(organiser, house_bots, client) -> None:
    ladder = season_ladder(organiser, house_bots, season_regression=0.5)
    first_tick = ladder.started_at + timedelta(hours=1)
    played, late = tick(ladder, first_tick)
    assert played.season == late.season == 1
    play(played)
    play(late, done=False)  # still open when the season ends: its games come later
    season = Season.objects.get(tournament=ladder, number=1)
    assert season.ended_at is None and season.ends_at == ladder.started_at + timedelta(days=7)
    before = ratings(ladder)
    assert before and any(abs(r - START_RATING) > 1 for r in before.values())

    # The next tick after the season's end freezes it and opens season 2.
    new_tables = tick(ladder, ladder.started_at + timedelta(days=7, hours=1))
    season.refresh_from_db()
    assert season.ended_at == season.ends_at
    frozen = [dict(row) for row in season.standings]
    assert sum(row["games"] for row in frozen) == 4 * 4  # two tables' games, four seats each
    assert frozen[0]["rank"] == 1 and frozen[0]["points"] >= frozen[-1]["points"]
    # The rating rule: half way back to 1500, for every entrant with a rating.
    after = ratings(ladder)
    for bot_id, rating in before.items():
        assert after[bot_id] == pytest.approx(START_RATING + (rating - START_RATING) * 0.5)
    assert season.regressed[str(next(iter(before)))][0] == pytest.approx(before[next(iter(before))])
    second = Season.objects.get(tournament=ladder, ended_at__isnull=True)
    assert second.number == 2 and second.started_at == season.ends_at
    assert new_tables and {t.season for t in new_tables} == {2}

    # Later games: the late season-1 table and season 2's tables. Season 1 stays as frozen.
    table_complete(table_id=late.pk)
    for table in new_tables:
        play(table)
    season.refresh_from_db()
    assert season.standings == frozen
    # Season 2's standings count its own tables only.
    api = APIClient()
    live = api.get(f"/api/v1/tournaments/{ladder.slug}/standings/").json()
    assert sum(r["games"] for r in live) == 4 * 2 * len(new_tables)
    assert api.get(f"/api/v1/tournaments/{ladder.slug}/").json()["season"] == 2
    # Recomputing the pool replays the season's step at its place: the stored ratings exactly.
    report = ratings_recompute(pool=ladder.pool, write=False)
    assert report.max_difference == 0.0

    # The API lists the seasons and gives the frozen standings.
    listed = api.get(f"/api/v1/tournaments/{ladder.slug}/seasons/").json()["results"]
    assert [(s["number"], s["open"]) for s in listed] == [(2, True), (1, False)]
    detail = api.get(listed[1]["url"]).json()
    assert detail["regression"] == 0.5
    assert [(r["bot_name"], r["games"], r["points"]) for r in detail["standings"]] == [
        (r["bot_name"], r["games"], r["points"]) for r in frozen
    ]
    assert api.get(f"/api/v1/tournaments/{ladder.slug}/seasons/9/").status_code == 404

    # The pages: the ladder's page lists the past season, its page the frozen standings.
    page = client.get(f"/tournaments/{ladder.slug}/").content.decode()
    assert 'id="seasons"' in page and f"/tournaments/{ladder.slug}/seasons/1/" in page and "season 2," in page
    archived = client.get(f"/tournaments/{ladder.slug}/seasons/1/").content.decode()
    assert "Final standings" in archived and frozen[0]["bot_name"] in archived
    assert "moved 50 % of the way back to 1500" in archived
    assert client.get(f"/tournaments/{ladder.slug}/seasons/2/").status_code == 302  # the open one: the ladder page
    assert client.get(f"/tournaments/{ladder.slug}/seasons/7/").status_code == 404


def test_ratings_carry_over_by_default(organiser, house_bots) -> None:
    ladder = season_ladder(organiser, house_bots)
    assert ladder.season_regression == 0.0
    for table in tick(ladder, ladder.started_at + timedelta(hours=1)):
        play(table)
    before = ratings(ladder)
    tick(ladder, ladder.started_at + timedelta(days=7, hours=1))
    assert ratings(ladder) == before
    closed = Season.objects.get(tournament=ladder, number=1)
    assert closed.rating_seq is None and closed.regressed == {}


def test_a_beat_stopped_for_weeks_closes_each_missed_season(organiser, house_bots) -> None:
    ladder = season_ladder(organiser, house_bots)
    seasons_roll(tournament=ladder, now=ladder.started_at + timedelta(days=22))
    rows = list(Season.objects.filter(tournament=ladder).values_list("number", "ended_at"))
    assert [n for n, _ in rows] == [1, 2, 3, 4]
    assert [ended is None for _, ended in rows] == [False, False, False, True]


def test_season_settings_are_checked(organiser, house_bots) -> None:
    with pytest.raises(ValidationError) as err:
        tournament_create(organiser=organiser, name="Cup", format="round_robin", season_days=7)
    assert "season_days" in err.value.message_dict
    api = APIClient()
    api.force_authenticate(organiser)
    bad = api.post("/api/v1/tournaments/", {"name": "L", "format": "ladder", "season_regression": 2}, format="json")
    assert bad.status_code == 400 and "season_regression" in bad.json()
    made = api.post(
        "/api/v1/tournaments/", {"name": "L", "format": "ladder", "season_days": 30, "season_regression": 0.25},
        format="json",
    )
    assert made.status_code == 201, made.json()
    assert (made.json()["season_days"], made.json()["season_regression"]) == (30, 0.25)
    slug = made.json()["slug"]
    edited = api.patch(f"/api/v1/tournaments/{slug}/", {"season_days": 14}, format="json")
    assert edited.status_code == 200 and edited.json()["season_days"] == 14
    draft = Tournament.objects.get(slug=slug)
    tournament_update(tournament=draft, season_days=None)
    draft.refresh_from_db()
    assert draft.season_days is None
