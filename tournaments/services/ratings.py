"""Rating pools and ratings: the pool of a preset and table size, the current ratings of
bots, and rebuilding a pool's ratings from its games (`recompute_ratings`). Rating each
recorded game in plan order is tournaments.rating_order's; recording calls it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from tournaments.models import (
    START_RATING,
    GameSeat,
    Rating,
    RatingChange,
    RatingPool,
    Season,
)
from tournaments.ratings.elo import elo_deltas, season_regressed


def rating_pool_get(*, preset: str, seats: int) -> RatingPool:
    pool, _ = RatingPool.objects.get_or_create(
        preset=preset, seats=seats, defaults={"k_factor": settings.TIENLEN_DEFAULT_K_FACTOR}
    )
    return pool


def ratings_by_bot(*, pool: RatingPool | None, bot_ids: Iterable[int]) -> dict[int, float]:
    """The current rating of each of these bots that has one in the pool (none: unrated)."""
    if pool is None:
        return {}
    return dict(Rating.objects.filter(pool=pool, bot_id__in=list(bot_ids)).values_list("bot_id", "rating"))


@dataclass(frozen=True)
class RecomputeReport:
    pool: str
    games: int
    bots: int
    changed_ratings: int
    max_difference: float


def ratings_recompute(*, pool: RatingPool, write: bool = True, progress: Callable[[int], None] | None = None) -> RecomputeReport:
    """Rebuild every rating of a pool from its games, in recorded order (rating_seq).

    With the pool's K unchanged this reproduces the stored ratings bit for bit; the report
    says how far the stored values were from the recomputed ones. A ladder season's rating
    rule (tournaments.services.seasons) is replayed at its place in the sequence.
    """
    with transaction.atomic():
        pool = RatingPool.objects.select_for_update().get(pk=pool.pk)
        rows = (
            GameSeat.objects.filter(game__pool=pool, game__rating_seq__isnull=False)
            .order_by("game__rating_seq", "seat")
            .values_list("game__rating_seq", "game_id", "bot_id", "place")
            .iterator(chunk_size=20000)
        )
        current: dict[int, float] = {}
        games: dict[int, int] = {}
        history: dict[tuple[int, int], tuple[float, float]] = {}
        k = pool.k_factor
        count = 0
        # Season steps (seq, fraction, bots), applied before the first game rated after them.
        steps = [
            (s.rating_seq, s.regression, [int(b) for b in s.regressed])
            for s in Season.objects.filter(pool=pool, rating_seq__isnull=False).order_by("rating_seq")
        ]

        def steps_until(seq: int | None) -> None:
            while steps and (seq is None or steps[0][0] < seq):
                _, fraction, bots = steps.pop(0)
                for b in sorted(bots):
                    if b in current:
                        current[b] = season_regressed(current[b], fraction, mean=START_RATING)

        def flush(game_id: int, bots: list[int], places: list[int]) -> None:
            before = [current.get(b, START_RATING) for b in bots]
            deltas = elo_deltas(before, places, k)
            for b, old, d in zip(bots, before, deltas, strict=True):
                current[b] = old + d
                games[b] = games.get(b, 0) + 1
                history[(game_id, b)] = (old, old + d)

        seq_prev = None
        game_prev = None
        bots: list[int] = []
        places: list[int] = []
        for seq, game_id, bot_id, place in rows:
            if seq != seq_prev and bots:
                flush(game_prev, bots, places)
                count += 1
                if progress and count % 10000 == 0:
                    progress(count)
                bots, places = [], []
            if seq != seq_prev:
                steps_until(seq)
            seq_prev, game_prev = seq, game_id
            bots.append(bot_id)
            places.append(place)
        if bots:
            flush(game_prev, bots, places)
            count += 1
        steps_until(None)
        stored = {r.bot_id: r for r in Rating.objects.filter(pool=pool)}
        max_diff = 0.0
        changed = []
        for bot_id, value in current.items():
            row = stored.get(bot_id)
            old = row.rating if row else START_RATING
            max_diff = max(max_diff, abs(old - value))
            if row is None:
                row = Rating(pool=pool, bot_id=bot_id)
                stored[bot_id] = row
            if row.rating != value or row.games != games[bot_id] or row.pk is None:
                row.rating = value
                row.games = games[bot_id]
                changed.append(row)
        if write:
            Rating.objects.bulk_create([r for r in changed if r.pk is None])
            Rating.objects.bulk_update([r for r in changed if r.pk is not None], ["rating", "games"], batch_size=1000)
            stale = []
            for change in RatingChange.objects.filter(pool=pool).only("id", "game_id", "bot_id", "rating_before", "rating_after").iterator(chunk_size=20000):
                expected = history.get((change.game_id, change.bot_id))
                if expected and (change.rating_before, change.rating_after) != expected:
                    change.rating_before, change.rating_after = expected
                    stale.append(change)
            RatingChange.objects.bulk_update(stale, ["rating_before", "rating_after"], batch_size=1000)
    return RecomputeReport(str(pool), count, len(current), len(changed), max_diff)
