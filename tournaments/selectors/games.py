"""Games: lists (revealed games only), one game's result, seating, replay and proof.

Every read of one game's result, replay or proof checks it with `sealing.game_check`
and raises `sealing.DealWithheld` while its deal is sealed: the API views answer 403
and the web pages the withheld page, never a result.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Prefetch, QuerySet, prefetch_related_objects

from tournaments.models import Bot, Game, GameSeat, Replay, Table, Tournament
from tournaments.sealing import game_check, replay_for, replay_public, revealed, sealed_games


def game_list(*, tournament: Tournament | None = None, bot: Bot | None = None, table: Table | None = None) -> QuerySet[Game]:
    """Revealed games, newest first, with seats and bots prefetched (2 queries per page).
    Sealed games (their deal is still to be played at another table) are left out."""
    qs = Game.objects.select_related("table__tournament", "deal").prefetch_related(
        Prefetch("seats", queryset=GameSeat.objects.select_related("bot", "version").order_by("seat"))
    )
    if tournament is not None:
        # An IN over the tournament's table ids lets the database walk games newest first
        # and stop at the page size instead of sorting every game of the tournament.
        qs = qs.filter(table_id__in=Table.objects.filter(tournament_id=tournament.pk).values("id"))
        qs = qs.exclude(id__in=sealed_games(tournament=tournament))
    else:
        qs = qs.filter(revealed())
    if table is not None:
        qs = qs.filter(table=table)
    if bot is not None:
        qs = qs.filter(seats__bot=bot)
    return qs.order_by("-id")  # ids follow recording order; the primary key index avoids a sort


def game_get(*, game_id: int) -> Game:
    """A revealed game with its seats (2 queries); DealWithheld (its result is sealed) while
    its deal is still to be played at another table of its group."""
    game = game_check(Game.objects.select_related("table__tournament", "pool", "deal").get(pk=game_id))
    prefetch_related_objects(
        [game], Prefetch("seats", queryset=GameSeat.objects.select_related("bot", "version").order_by("seat"))
    )
    return game


PROOF_SCHEMA = "tienlen.deal-proof/1"


def game_replay(*, game_id: int, user: Any = None) -> dict[str, Any]:
    """The engine's replay JSON of a game as `user` may see it: the move notes of the seats
    `user`'s bots played and no other (`sealing.replay_for`; 1 query, 2 for a signed-in
    user when the replay has notes); DealWithheld until its deal is revealed, ReplayError
    (bots_sdk.rules) if the stored replay cannot be read."""
    replay = Replay.objects.select_related("game__deal", "game__table__tournament").get(game_id=game_id)
    game_check(replay.game, what="replay")
    return replay_for(replay.read(), user=user, game=replay.game)


def game_seating(*, game: Game) -> list[dict[str, Any]]:
    """Who sat where in a game, sealed or not (1 query): seat numbers and bot names only,
    which are public from the draw on; never its places, points or strikes."""
    return [
        {"seat": seat, "bot_name": name}
        for seat, name in GameSeat.objects.filter(game_id=game.pk).order_by("seat").values_list("seat", "bot__name")
    ]


def game_replay_stored(*, game: Game | int) -> Replay:
    """A revealed game's stored replay row (1 query; 2 from an id), its `game` set: for the
    pages that show the moves and timing or serve the text as it was stored. The game is
    checked before the replay is looked for, so a sealed game answers as every sealed game
    does: Game.DoesNotExist (no such game), DealWithheld (sealed; `.game` has its table and
    tournament), Replay.DoesNotExist (none stored)."""
    if not isinstance(game, Game):
        game = Game.objects.select_related("table__tournament", "deal").get(pk=game)
    game_check(game, what="replay")
    replay = Replay.objects.get(game_id=game.pk)
    replay.game = game
    return replay


def replay_public_text(*, replay: Replay) -> str:
    """A revealed game's replay as the public download serves it: checked by the engine's
    reader, the text as the referee sent it; ReplayError if the stored replay is damaged.
    The `/games/<id>/replay.json` download and the tournament's replay archive both serve
    this, so a replay has one public form. Check the game (`game_check`) first. A replay
    with move notes is served without those its bots' owners did not publish
    (`sealing.replay_public`; 1 query more), re-encoded as compact JSON."""
    data = replay.read()
    public = replay_public(data, game_id=replay.game_id)
    return replay.decoded_text() if public is data else json.dumps(public, separators=(",", ":"))


def revealed_replays(*, tournament: Tournament, after_game_id: int = 0, limit: int = 200) -> list[Replay]:
    """The next `limit` stored replays of the tournament's revealed games after game
    `after_game_id`, in game order, each with its game and table (1 query): an archive
    of every replay read in batches of bounded size. Sealed games are left out."""
    return list(
        Replay.objects.filter(game__table__tournament_id=tournament.pk, game_id__gt=after_game_id)
        .exclude(game_id__in=sealed_games(tournament=tournament))
        .select_related("game__table")
        .order_by("game_id")[:limit]
    )


def game_proof(*, game_id: int) -> dict[str, Any]:
    """Everything needed to verify a game's deal and result in one document (schema
    tienlen.deal-proof/1, docs/fair-play.md): the commitment, the salt, the revealed seed,
    the recorded result and the replay (2 queries). DealWithheld until the reveal,
    ReplayError if the stored replay cannot be read."""
    from bots_sdk.fairplay import COMMIT_SCHEME, DEAL_ALGORITHM

    game = game_check(Game.objects.select_related("table__tournament", "deal").get(pk=game_id), what="replay")
    tournament = game.table.tournament
    replay = Replay.objects.get(game_id=game.pk)
    return {
        "schema": PROOF_SCHEMA,
        "game": {
            "id": game.pk, "tournament": tournament.slug, "round": game.table.round,
            "table": game.table.number, "index": game.index, "players": game.players,
            "finishing_order": game.finishing_order, "points": game.points,
        },
        "deal": {
            "group": game.deal.group, "index": game.deal.index, "algorithm": DEAL_ALGORITHM,
            "commitment_scheme": COMMIT_SCHEME, "salt": tournament.salt,
            "commitment": game.deal.commitment, "seed": game.deal.seed,
            "revealed_at": game.deal.revealed_at.isoformat(),
        },
        "reproducible": tournament.reproducible,
        "replay": replay_public(replay.read(), game_id=game.pk),  # a proof is public: published notes only
    }
