"""A tournament's downloads: standings, cross-table and games as CSV, and its replays as one
zip archive.

Each export is what the public pages show, read through the same selectors
(tournaments.selectors), which ask tournaments.sealing: no sealed game, no result of a
table still sealed, no rating change; the archive holds the revealed games' replays in the
form `/games/<id>/replay.json` serves (`replay_public_text`) and counts the games still
withheld. Nothing here reads a model of its own.

Cells are safe to open in a spreadsheet: text (bot, owner, tournament names are user
input) that starts with a character a spreadsheet reads as a formula (= + - @, tab, CR) is
prefixed with an apostrophe (OWASP, "CSV injection"); numbers are written as numbers.

The games CSV and the archive are generated as they are sent, in batches of bounded size,
so a tournament of 10,000 games is never held in memory at once.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC
from typing import Any

from bots_sdk.rules import ReplayError
from tournaments.models import Tournament
from tournaments.sealing import DEAL_WITHHELD, sealed_game_count
from tournaments.selectors.cross_table import tournament_cross_table
from tournaments.selectors.games import game_list, replay_public_text, revealed_replays
from tournaments.selectors.standings import tournament_standings

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
ARCHIVE_SCHEMA = "tienlen.replay-archive/1"
BATCH = 200  # games (or replays) read per query while streaming


def csv_cell(value: Any) -> Any:
    """One cell: text that a spreadsheet would run as a formula is prefixed with '."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_lines(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """The CSV text, a line at a time (header first)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header)
    yield out.getvalue()
    for row in rows:
        out.seek(0)
        out.truncate()
        writer.writerow([csv_cell(v) for v in row])
        yield out.getvalue()


# --- standings ---------------------------------------------------------------------------

STANDINGS_HEADER = (
    "rank", "bot", "owner", "status", "games", "points", "points_per_game", "points_ci95",
    "firsts", "place_mean", "strikes", "forfeits",
)


def standings_rows(*, tournament: Tournament) -> list[list[Any]]:
    """The standings as the tournament page shows them (revealed games only)."""
    return [
        [s.rank, s.bot_name, s.owner, s.status, s.games, s.points,
         round(s.points_mean, 4) if s.games else None, round(s.points_ci, 4) if s.games > 1 else None,
         s.firsts, round(s.place_mean, 4) if s.games else None, s.strikes, s.forfeits]
        for s in tournament_standings(tournament=tournament, with_strength=False)
    ]


# --- cross-table -------------------------------------------------------------------------

CROSS_TABLE_HEADER = ("bot", "opponent", "games", "above", "below", "points_difference", "score")


def cross_table_rows(*, tournament: Tournament) -> list[list[Any]]:
    """Every pair of entrants that shared a revealed game, one row per direction, entrants
    in the cross-table's order (the API's cross-table as rows)."""
    table = tournament_cross_table(tournament=tournament)
    names = {e["entrant_id"]: e["bot_name"] for e in table.entrants}
    rows = []
    for entrant in table.entrants:
        mine = table.cells.get(entrant["entrant_id"], {})
        for other in table.entrants:
            cell = mine.get(other["entrant_id"])
            if other["entrant_id"] == entrant["entrant_id"] or not cell or not cell["games"]:
                continue
            rows.append([names[entrant["entrant_id"]], names[other["entrant_id"]], int(cell["games"]), int(cell["above"]),
                         int(cell["below"]), int(cell["points"]), float(cell["score"])])
    return rows


# --- games -------------------------------------------------------------------------------

GAMES_HEADER = (
    "game", "round", "table", "game_at_table", "recorded_at", "duration_ms",
    "seat", "bot", "version", "place", "points", "strikes", "forfeited",
)


def games_rows(*, tournament: Tournament) -> Iterator[list[Any]]:
    """One row per seat of every revealed game, newest game first (the games page's
    order), read BATCH games at a time (2 queries a batch)."""
    games = game_list(tournament=tournament)
    last: int | None = None
    while True:
        batch = list((games if last is None else games.filter(id__lt=last))[:BATCH])
        for game in batch:
            for seat in game.seats.all():
                yield [
                    game.pk, game.table.round, game.table.number, game.index + 1,
                    game.recorded_at.astimezone(UTC).isoformat() if game.recorded_at else None,
                    game.duration_ms, seat.seat, seat.bot.name, seat.version.version if seat.version else None,
                    seat.place, seat.points, seat.strikes, seat.forfeited,
                ]
        if len(batch) < BATCH:
            return
        last = batch[-1].pk


# --- the replay archive ------------------------------------------------------------------


class _Pipe(io.RawIOBase):
    """Where the zip writer writes: kept until taken, so each member leaves as it is done."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:  # type: ignore[override]
        self._chunks.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out = b"".join(self._chunks)
        self._chunks.clear()
        return out


def replay_archive_name(tournament: Tournament) -> str:
    return f"tienlen-{tournament.slug}-replays.zip"


def replay_archive(*, tournament: Tournament) -> Iterator[bytes]:
    """The zip archive of the tournament's revealed games' replays, generated as it is
    sent: `replays/tienlen-game-<id>.json` each (the text `/games/<id>/replay.json`
    serves), and `manifest.json` last, listing them with their round, table and game,
    those whose stored replay is damaged, and how many games are withheld (sealed: their
    deal is still to be played at another table), by number only."""
    pipe = _Pipe()
    listed: list[dict[str, Any]] = []
    unreadable: list[dict[str, Any]] = []
    withheld = sealed_game_count(tournament=tournament)
    with zipfile.ZipFile(pipe, mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
        after = 0
        while True:
            batch = revealed_replays(tournament=tournament, after_game_id=after, limit=BATCH)
            for replay in batch:
                game = replay.game
                try:
                    text = replay_public_text(replay=replay)
                except ReplayError as exc:
                    unreadable.append({"game": game.pk, "error": str(exc)})
                    continue
                name = f"replays/tienlen-game-{game.pk}.json"
                info = zipfile.ZipInfo(name, date_time=_zip_time(game.recorded_at))
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, text)
                listed.append({"game": game.pk, "round": game.table.round, "table": game.table.number,
                               "game_at_table": game.index + 1, "file": name})
                yield pipe.take()
            if len(batch) < BATCH:
                break
            after = batch[-1].game_id
        manifest = {
            "schema": ARCHIVE_SCHEMA, "tournament": tournament.slug, "name": tournament.name,
            "replays": listed, "unreadable": unreadable, "games_withheld": withheld,
            "withheld": f"Games withheld are not included: their result and replay are {DEAL_WITHHELD}.",
        }
        info = zipfile.ZipInfo("manifest.json", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        archive.writestr(info, json.dumps(manifest, indent=1, ensure_ascii=False))
    yield pipe.take()


def _zip_time(when) -> tuple[int, int, int, int, int, int]:
    if when is None:
        return (1980, 1, 1, 0, 0, 0)
    t = when.astimezone(UTC)
    return (max(t.year, 1980), t.month, t.day, t.hour, t.minute, t.second)
