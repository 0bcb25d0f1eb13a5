"""`tienlen-referee play`: have a running referee play one table, and print the result.

The quickest way for a bot author (in any language) to play their bot against the house
bots on a standalone referee: the table is played through the organiser API, exactly as a
tournament worker would, and the result is the arena's table (points per game with their
95 % interval, places) with the referee's strikes and forfeits.

    TIENLEN_ORGANIZER_TOKEN=... tienlen-referee play --server 127.0.0.1:50051 \\
        --seats alice,house:heuristic,house:greedy,house:random --games 20
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any, TextIO

from bots_sdk.cli import rule_option
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.stats import GameRecord, format_report, pairwise, summarize
from referee_service.organizer_client import OrganizerClient, RefereeError
from referee_service.participants import participant_bot_id

PROG = "tienlen-referee play"
STRIKE_FALLBACKS = ("timeout", "illegal_moves", "disconnected")


class PlayError(Exception):
    """A mistake the user can fix; printed as one line."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Have a running referee play one table between connected bots and "
                    "house bots, then print the result. The organiser token comes from "
                    "TIENLEN_ORGANIZER_TOKEN (the token the referee was started with).")
    parser.add_argument("--server", required=True, metavar="HOST:PORT",
                        help="the referee (its --listen address)")
    parser.add_argument("--seats", required=True, metavar="A,B[,C[,D]]",
                        help="2-4 players in seat order: bot ids (the bot must be connected) "
                             "or house:random, house:greedy, house:heuristic")
    parser.add_argument("--games", type=int, required=True, help="games to play")
    parser.add_argument("--preset", default="south", help="rule preset (default %(default)s)")
    parser.add_argument("--option", type=rule_option, action="append", default=[],
                        metavar="KEY=VALUE", help="override a rule option (repeatable)")
    parser.add_argument("--move-time-ms", type=int, default=0,
                        help="time per move (default: the referee's, 1000)")
    parser.add_argument("--wait", type=float, default=60.0, metavar="SECONDS",
                        help="how long the referee waits for absent bots to connect "
                             "(default %(default)g)")
    parser.add_argument("--table-id", help="the table's id (default: play-<random>)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


def _target(server: str) -> str:
    host, sep, port = server.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise PlayError(f"--server must be HOST:PORT, got {server!r}")
    return server


def _seats(text: str) -> list[str]:
    seats = [s.strip() for s in text.split(",")]
    if any(not s for s in seats):
        raise PlayError(f"--seats: an empty name in {text!r} (names are separated by commas)")
    if not 2 <= len(seats) <= 4:
        raise PlayError(f"--seats: a table has 2 to 4 seats, got {len(seats)}")
    return seats


def _labels(seats: Sequence[str]) -> list[str]:
    """Seat names for the table; a repeated house bot gets #2, #3."""
    seen: Counter[str] = Counter()
    labels = []
    for seat in seats:
        seen[seat] += 1
        labels.append(seat if seen[seat] == 1 else f"{seat}#{seen[seat]}")
    return labels


def _explain(exc: RefereeError, target: str, seats: Sequence[str]) -> str:
    if exc.code == "UNAVAILABLE":
        return (f"cannot reach the referee at {target} ({exc.message}); is it running, and "
                "is this its --listen address?")
    if exc.code == "UNAUTHENTICATED":
        return (f"the referee refused the organiser token: {exc.message} (set "
                "TIENLEN_ORGANIZER_TOKEN to the token the referee was started with)")
    if exc.code == "FAILED_PRECONDITION":
        bots = [s for s in seats if participant_bot_id(s) is not None]
        return (f"{exc.message}; start each bot first, e.g. `tienlen-bot run BOT --server "
                f"{target}` with its token (bots in this table: {', '.join(bots)})")
    if exc.code == "UNIMPLEMENTED":
        return f"{target} is not a Tiến Lên referee ({exc.message})"
    return exc.message if exc.code == "INVALID_ARGUMENT" else f"{exc.code}: {exc.message}"


def play(args: argparse.Namespace, token: str, out: TextIO, err: TextIO) -> int:
    target = _target(args.server)
    seats = _seats(args.seats)
    if args.games < 1:
        raise PlayError("--games must be at least 1")
    if args.wait <= 0:
        raise PlayError("--wait must be a positive number of seconds")
    labels = _labels(seats)
    table_id = args.table_id or f"play-{secrets.token_hex(4)}"
    progress = err.isatty() and not args.json
    games: list[org.GameRecord] = []
    result: org.TableResult | None = None
    with OrganizerClient(target, token) as client:
        try:
            for event in client.play_table(
                    table_id=table_id, seats=seats, preset=args.preset,
                    options=dict(args.option), games=args.games,
                    move_time_ms=args.move_time_ms,
                    connect_deadline_ms=int(args.wait * 1000)):
                if isinstance(event, org.GameRecord):
                    games.append(event)
                    if progress:
                        print(f"\r{PROG}: game {len(games)}/{args.games}", end="", file=err,
                              flush=True)
                elif isinstance(event, org.TableResult):
                    result = event
        except RefereeError as exc:
            if progress and games:
                print(file=err)
            raise PlayError(_explain(exc, target, seats)) from None
        except KeyboardInterrupt:
            print(f"\n{PROG}: interrupted: table {table_id} aborted after {len(games)} "
                  "games", file=err)
            return 130
    if progress:
        print(file=err)
    if result is None:
        raise PlayError(f"the referee ended table {table_id} without a result")
    report, rows, pairs = table_report(games, result, labels)
    if args.json:
        print(json.dumps(report, indent=2), file=out)
    else:
        print(format_table_report(report, rows, pairs, args.preset, table_id), file=out)
    return 0 if result.status == org.TABLE_STATUS_COMPLETED else 1


def table_report(games: Sequence[org.GameRecord], result: org.TableResult,
                 labels: Sequence[str]) -> tuple[dict[str, Any], list[Any], list[Any]]:
    """Per participant: the arena's summary of the games, the referee's strikes and
    forfeits, and each strike's reason (from the games' timing records)."""
    records = []
    reasons: list[Counter[str]] = [Counter() for _ in labels]
    for game in games:
        entrants = tuple(game.seat_participants)
        think = [0.0] * len(entrants)
        moves = [0] * len(entrants)
        timing = json.loads(game.timing_json) if game.timing_json else {}
        for move in timing.get("moves", []):
            seat = move["seat"]
            think[seat] += move["elapsed_ms"] / 1000
            moves[seat] += 1
            if move.get("fallback") in STRIKE_FALLBACKS:
                reasons[entrants[seat]][move["fallback"]] += 1
        records.append(GameRecord(unit=game.game_index, entrants=entrants,
                                  points=tuple(game.result.points),
                                  finishing_order=tuple(game.result.finishing_order),
                                  think_s=tuple(think), moves=tuple(moves)))
    rows = summarize(records, labels)
    strikes = list(result.strikes) or [0] * len(labels)
    forfeited = set(result.forfeited)
    totals = list(result.totals) or [0] * len(labels)
    for index, row in enumerate(rows):
        row.strikes = strikes[index]  # the referee's count (a disconnection is one strike)
    report = {
        "table_id": result.table_id,
        "status": org.TableStatus.Name(result.status).removeprefix("TABLE_STATUS_").lower(),
        "detail": result.detail,
        "games": len(games),
        "participants": [
            {"seat": index, "name": label, "points": totals[index],
             "points_per_game": rows[index].points.mean,
             "ci95_half_width": rows[index].points.half_width if len(games) > 1 else None,
             "first_places": rows[index].firsts, "strikes": strikes[index],
             "strike_reasons": dict(reasons[index]), "forfeited": index in forfeited}
            for index, label in enumerate(labels)],
    }
    return report, rows, pairwise(records, labels)


def format_table_report(report: dict[str, Any], rows: Sequence[Any], pairs: Sequence[Any],
                        preset: str, table_id: str) -> str:
    status = report["status"]
    head = (f"table {table_id}: {report['games']} games, preset {preset}, {status}"
            + (f" ({report['detail']})" if report["detail"] else ""))
    lines = [head, "", format_report(rows, pairs, units=report["games"], unit_name="games")]
    struck = [p for p in report["participants"] if p["strikes"] or p["forfeited"]]
    lines.append("")
    if not struck:
        lines.append("strikes: none")
    for p in struck:
        why = ", ".join(f"{reason} {n}" for reason, n in sorted(p["strike_reasons"].items()))
        lines.append(f"strikes: {p['name']} {p['strikes']}" + (f" ({why})" if why else "")
                     + (" - forfeited the rest of the table" if p["forfeited"] else ""))
    lines.append("(ms/move is the referee's measure: from the request to the answer)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = build_parser().parse_args(argv)
    token = os.environ.get("TIENLEN_ORGANIZER_TOKEN", "").strip()
    try:
        if not token:
            raise PlayError("set TIENLEN_ORGANIZER_TOKEN to the referee's organiser token "
                            "(the one it was started with)")
        return play(args, token, out, err)
    except PlayError as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=err)
        return 130
