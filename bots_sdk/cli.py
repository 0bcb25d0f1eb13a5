"""`tienlen-bot`: run, test, create and inspect bots from the command line.

Every error a user can cause (a missing file, a class that is not there, a bot that
raises on import, a malformed replay) is printed as one line, `tienlen-bot: error: ...`,
with exit status 2; tracebacks are for bugs in the SDK itself. `arena` exits with status
1 when a bot never made a legal move of its own (every one of its moves was a fallback),
so a script or CI job running it notices a broken bot.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]


class UsageError(Exception):
    """A mistake in what the user asked for; shown as one line."""


def rule_option(text: str) -> tuple[str, Any]:
    """An argparse type for `--option KEY=VALUE` (the value as JSON when it parses, else
    text); `tienlen-referee play` takes the same flag."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--option takes KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def build_parser() -> argparse.ArgumentParser:
    from bots_sdk.runner import add_connection_args

    parser = argparse.ArgumentParser(
        prog="tienlen-bot", description="Write, test and run Tiến Lên bots."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", help="play on a referee (tienlen-bot run bot.py --server H:P)")
    p.add_argument("bot", help="bot file, file.py:Class, module:Class or an example name")
    add_connection_args(p)

    p = sub.add_parser("arena", help="play local games between bots, no server needed")
    p.add_argument("bots", nargs="+", metavar="BOT", help="2-4 bots: files, module:Class or random/greedy/heuristic/search")
    p.add_argument("--games", type=int, default=100, help="games to play (default %(default)s)")
    p.add_argument("--preset", default="south", help="rule preset (default %(default)s)")
    p.add_argument("--players", type=int, default=4, choices=(2, 3, 4), help="seats per game")
    p.add_argument("--duplicate", action="store_true", help="replay each deal in every seat rotation (less luck)")
    p.add_argument("--seed", default="arena", help="deal seed (same seed, same deals)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default %(default)s)")
    p.add_argument("--replays", type=Path, metavar="DIR", help="write each game's replay JSON here")
    p.add_argument("--option", type=rule_option, action="append", default=[], metavar="KEY=VALUE", help="override a rule option")
    p.add_argument(
        "--sprt",
        type=float,
        metavar="DELTA",
        help="sequential test (SPRT) of the first bot against the second, H0: no difference, "
        "H1: DELTA points per game better (5%% error each way): stop as soon as it decides; "
        "--games is then the maximum",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--show-errors", type=int, default=10, metavar="N", help="list the first N bot errors (default %(default)s)")

    p = sub.add_parser("new", help="create a starter bot project")
    p.add_argument("name", help="project directory / bot name, e.g. my_bot")
    p.add_argument("--force", action="store_true", help="write into an existing non-empty directory")

    p = sub.add_parser("replay", help="print a replay move by move")
    p.add_argument("file", type=Path, help="replay JSON (tienlen.replay/1)")
    p.add_argument("--symbols", action="store_true", help="print suits as ♠♣♦♥")

    p = sub.add_parser(
        "fork",
        help="ask a bot what it plays at any move of a stored game (and play it out from there)",
        description="Rebuild the position before move N of a stored game, exactly as the seat to "
        "move saw it (its own hand, the public plays, the offers it got; never the other hands), "
        "ask BOT what it plays there and print it beside the move that was played. Moves are "
        "numbered as `tienlen-bot replay` prints them: 1 is the game's first move, passes and "
        "declined offers count. The bot is asked at its earlier turns too (as in the game; the "
        "stored moves are played), then at N. Exit status 0: the bot answered; 1: it raised or "
        "answered an illegal move at N; 2: bad input; 3: the platform refuses the game's replay, "
        "its deal being sealed. See docs/bot-guide.md, \"Fork a game from any move\".",
    )
    p.add_argument("game", metavar="GAME",
                   help="a replay file (tienlen.replay/1: `arena --replays`, the platform's download) "
                   "or a game's URL on the platform")
    p.add_argument("--move", type=int, required=True, metavar="N",
                   help="fork before move N (numbered as `tienlen-bot replay` prints them, from 1)")
    p.add_argument("--bot", required=True, help="bot file, file.py:Class, module:Class or an example name")
    p.add_argument("--seat", type=int, metavar="S",
                   help="the seat to fork (default: the seat to move at N); its first turn at or after N")
    p.add_argument("--continue", dest="play_on", action="store_true",
                   help="then play the game out from there (the other hands as dealt) and print the result")
    p.add_argument("--bots", nargs="+", default=[], metavar="BOT",
                   help="with --continue: one bot per seat, one per other seat, or one for all the "
                   "others (default random); --bot always plays the forked seat")
    p.add_argument("--symbols", action="store_true", help="print suits as ♠♣♦♥")
    p.add_argument("--json", action="store_true", help="print the fork as JSON")

    p = sub.add_parser(
        "verify-replay",
        help="check a platform game: seed -> commitment, seed -> hands, moves -> result",
        description="Verify a game played on the platform (docs/fair-play.md): the revealed seed "
        "opens the commitment published before play, every hand was dealt from that seed "
        "(tienlen-deal-v1), and the moves re-simulate to the recorded result. Exit status 0: "
        "verified; 1: a check failed; 2: unreadable input; 3: the deal is still withheld.",
    )
    p.add_argument("source", metavar="FILE_OR_URL",
                   help="a game's URL (its page, /api/v1/games/ID/ or its proof), a saved proof "
                   "(tienlen.deal-proof/1) or a bare replay (tienlen.replay/1); '-' reads stdin")
    p.add_argument("--commitment", help="the published commitment (for a bare replay)")
    p.add_argument("--salt", help="the tournament's salt (for a bare replay)")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")

    p = sub.add_parser("check", help="certify a bot before it joins a ladder")
    p.add_argument("bot", help="bot file, file.py:Class, module:Class or an example name")
    p.add_argument("--games", type=int, default=6, help="local games per preset and table size (default %(default)s)")
    p.add_argument("--move-time-ms", type=int, default=1000, help="the ladder's time per move (default %(default)s)")
    p.add_argument("--skip-server", action="store_true", help="skip the protocol round trip")
    from bots_sdk import submit

    submit.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from bots_sdk.loader import BotLoadError

    parser = build_parser()
    args = parser.parse_args(argv)
    handler = {
        "run": cmd_run,
        "arena": cmd_arena,
        "new": cmd_new,
        "replay": cmd_replay,
        "check": cmd_check,
        "verify-replay": cmd_verify_replay,
        "fork": cmd_fork,
        "submit": _cmd_submit,
    }[args.command]
    try:
        return handler(args)
    except BrokenPipeError:  # `tienlen-bot replay x.json | head`: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("tienlen-bot: interrupted", file=sys.stderr)
        return 130
    except (BotLoadError, UsageError, _submit_error()) as exc:
        print(f"tienlen-bot: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        from bots_sdk.client import ClientError

        if isinstance(exc, ClientError | ValueError | OSError):
            print(f"tienlen-bot: error: {exc}", file=sys.stderr)
            return 2
        raise


def _cmd_submit(args: argparse.Namespace) -> int:
    from bots_sdk.submit import cmd_submit

    return cmd_submit(args)


def _submit_error() -> type[Exception]:
    from bots_sdk.submit import SubmitError

    return SubmitError


# ------------------------------------------------------------------ run


def cmd_run(args: argparse.Namespace) -> int:
    from bots_sdk.loader import load_bot_class
    from bots_sdk.runner import configure_logging, connect_and_play

    bot_cls = load_bot_class(args.bot)
    configure_logging(args.log_level)
    return connect_and_play(bot_cls, args)


# ------------------------------------------------------------------ arena


def cmd_arena(args: argparse.Namespace) -> int:
    from bots_sdk.arena import ArenaConfig, Lineup, ProgressBar, run_arena
    from bots_sdk.stats import (
        GameRecord,
        format_report,
        paired_differences,
        pairwise,
        sprt,
        summarize,
    )

    if len(args.bots) > args.players:
        raise UsageError(f"{len(args.bots)} bots for {args.players} seats; use --players {len(args.bots)}")
    if args.games < 1:
        raise UsageError("--games must be at least 1")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    _check_preset(args.preset, dict(args.option))
    lineup = Lineup.build(args.bots, args.players)
    config = ArenaConfig(
        lineup=lineup,
        games=args.games,
        preset=args.preset,
        players=args.players,
        duplicate=args.duplicate,
        seed=args.seed,
        jobs=args.jobs,
        replays_dir=args.replays,
        options=dict(args.option),
    )
    progress = None if args.quiet or args.json else ProgressBar()
    stop = None
    if args.sprt is not None:
        if args.sprt <= 0:
            raise UsageError("--sprt DELTA must be a positive number of points per game")
        if len(lineup.specs) < 2:
            raise UsageError("--sprt compares the first two bots: name two different bots")

        def stop(records: list[GameRecord]) -> bool:
            diffs = paired_differences(records, 0, 1, len(lineup.names))
            return sprt(diffs, args.sprt).decision is not None

    result = run_arena(config, progress, stop)
    rows = summarize(result.records, lineup.names)
    pairs = pairwise(result.records, lineup.names)
    units = len({r.unit for r in result.records})
    sprt_line = None
    if args.sprt is not None:
        test = sprt(paired_differences(result.records, 0, 1, len(lineup.names)), args.sprt)
        a, b = lineup.names[0], lineup.names[1]
        verdict = {
            "H1": f"{a} is better than {b}",
            "H0": f"no evidence that {a} is better than {b} by {args.sprt:g} points/game",
            None: "no decision yet (raise --games)",
        }[test.decision]
        sprt_line = (
            f"SPRT ({a} - {b}, delta {args.sprt:g}, alpha = beta = 0.05): {verdict}; "
            f"LLR {_llr(test.llr)} (bounds {test.lower:.2f}, {test.upper:.2f}) after "
            f"{len(result.records)} games"
        )
    broken = _never_legal(rows)
    if args.json:
        doc = _arena_json(result, rows, pairs)
        if sprt_line:
            doc["sprt"] = sprt_line
        print(json.dumps(doc, indent=2))
        return _report_never_legal(broken)
    mode = "duplicate sets" if args.duplicate else "games"
    print(
        f"{len(result.records)} games, preset {args.preset}, {args.players} players, "
        f"{'duplicate' if args.duplicate else 'independent'} deals, seed {args.seed!r}, "
        + (f"options {json.dumps(dict(args.option))}, " if args.option else "")
        + f"{result.elapsed_s:.1f} s ({result.games_per_second:.1f} games/s)"
    )
    print()
    print(format_report(rows, pairs, units=units, unit_name=mode, counts=("rejected", "fallbacks")))
    if any(r.games > len(result.records) for r in rows):
        print(
            "(seat-games: a bot named for several seats plays each of them, "
            f"so it has more seat-games than the {len(result.records)} games)"
        )
    if sprt_line:
        print()
        print(sprt_line)
    if result.errors:
        print()
        print(
            f"{len(result.errors)} fallback move(s): the bot raised or answered an illegal move, "
            "and the fallback (pass where allowed, else the weakest play) was played instead. "
            "On the referee the SDK client does the same, so these cost no strike; a strike is "
            "the referee moving for a seat that ran out of time, gave 3 illegal answers to one "
            "move or disconnected."
        )
        for line in result.errors[: args.show_errors]:
            print(f"  {line}")
        if len(result.errors) > args.show_errors:
            print(f"  ... {len(result.errors) - args.show_errors} more (--show-errors N)")
    if args.replays:
        print(f"\nreplays written to {args.replays}/ (index.json says who sat where)")
    return _report_never_legal(broken)


def _never_legal(rows: Any) -> list[Any]:
    """Bots that moved but never made a legal move of their own: every move was a fallback."""
    return [r for r in rows if r.moves and r.own_moves == 0]


def _report_never_legal(broken: list[Any]) -> int:
    """Exit status 1 (a test that failed) when some bot never made a legal move itself."""
    for r in broken:
        raised = r.fallbacks - r.rejected
        print(
            f"tienlen-bot: error: {r.name} never made a legal move of its own: all {r.moves} of "
            f"its moves were fallbacks (play() raised {raised} time(s), {r.rejected} illegal "
            "answer(s)); see the fallback lines above (--show-errors N)",
            file=sys.stderr,
        )
    return 1 if broken else 0


def _llr(value: float) -> str:
    return f"{value:+.2f}" if abs(value) < 1e6 else ("+inf" if value > 0 else "-inf")


def _check_preset(preset: str, options: dict[str, Any]) -> None:
    from bots_sdk.rules import PRESETS

    if preset not in PRESETS:
        raise UsageError(f"unknown preset {preset!r} (known: {', '.join(sorted(PRESETS))})")
    if options:
        merged = PRESETS[preset].to_dict()
        merged.update(options)
        try:
            type(PRESETS[preset]).from_dict(merged)
        except (ValueError, TypeError) as exc:
            raise UsageError(f"bad --option: {exc}") from None


def _arena_json(result: Any, rows: Any, pairs: Any) -> dict[str, Any]:
    def est(e: Any) -> dict[str, Any]:
        return {"mean": e.mean, "ci95": [e.low, e.high] if e.n > 1 else None, "n": e.n}

    return {
        "games": len(result.records),
        "seconds": result.elapsed_s,
        "bots": [
            {
                "name": r.name,
                "seat_games": r.games,
                "first_places": r.firsts,
                "average_place": r.avg_place,
                "points_per_game": est(r.points),
                "fallbacks": r.fallbacks,
                "rejected": r.rejected,
                "own_moves": r.own_moves,
                "ms_per_move": r.ms_per_move,
            }
            for r in rows
        ],
        "pairwise": [
            {"a": p.a, "b": p.b, "difference": est(p.diff), "significant": p.diff.excludes_zero}
            for p in pairs
        ],
        "errors": result.errors,
    }


# ------------------------------------------------------------------ new


def cmd_new(args: argparse.Namespace) -> int:
    from bots_sdk.templates import write_project

    written = write_project(Path(args.name), force=args.force)
    print(f"created {len(written)} files in {args.name}/:")
    for path in written:
        print(f"  {path}")
    bot = Path(args.name) / "bot.py"
    hints = [
        (f"tienlen-bot arena {bot} greedy --games 200 --duplicate", "how strong is it?"),
        (f"python -m pytest {args.name}", "its tests")
        if importlib.util.find_spec("pytest") is not None
        # The SDK brings no test runner: its `test` extra (or any pytest) does.
        else ("pip install pytest", f"then: python -m pytest {args.name} (its tests)"),
        (f"tienlen-bot check {bot}", "ready for a ladder?"),
    ]
    width = max(len(command) for command, _ in hints)
    print("\nnext:")
    for command, comment in hints:
        print(f"  {command.ljust(width)}   # {comment}")
    return 0


# ------------------------------------------------------------------ replay


def cmd_replay(args: argparse.Namespace) -> int:
    from bots_sdk.replay_print import ReplayError, format_replay

    try:
        text = args.file.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"replay file {str(args.file)!r} not found") from None
    names = _seat_names_from_index(args.file)
    try:
        print(format_replay(text, seat_names=names, symbols=args.symbols))
    except ReplayError as exc:
        raise UsageError(f"{args.file}: {exc}") from None
    return 0


def _seat_names_from_index(path: Path) -> list[str] | None:
    index = path.parent / "index.json"
    try:
        doc = json.loads(index.read_text())
        for g in doc.get("games", []):
            if g.get("file") == path.name:
                return list(g["seats"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


# ------------------------------------------------------------------ verify-replay

WITHHELD_EXIT = 3


def cmd_verify_replay(args: argparse.Namespace) -> int:
    from bots_sdk import fairplay

    if (args.commitment is None) != (args.salt is None):
        raise UsageError("--commitment and --salt go together")
    try:
        doc, source = fairplay.load(args.source)
        report = fairplay.verify(doc, source=source, commitment=args.commitment, salt=args.salt)
    except fairplay.DealWithheld as exc:
        print(f"tienlen-bot: not yet: {exc}", file=sys.stderr)
        return WITHHELD_EXIT
    except fairplay.VerifyInputError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps({"source": report.source, "verified": report.ok,
                          "checks": [c.__dict__ for c in report.checks]}, indent=2))
    else:
        print(report.text())
    return 0 if report.ok else 1


# ------------------------------------------------------------------ fork


def cmd_fork(args: argparse.Namespace) -> int:
    from bots_sdk import fork

    try:
        return fork.run(args.game, args.move, args.bot, seat=args.seat, play_on=args.play_on,
                        others=args.bots, symbols=args.symbols, as_json=args.json)
    except fork.Sealed as exc:
        print(f"tienlen-bot: error: {exc}", file=sys.stderr)
        return WITHHELD_EXIT
    except fork.ForkError as exc:
        raise UsageError(str(exc)) from None


# ------------------------------------------------------------------ check


def cmd_check(args: argparse.Namespace) -> int:
    from bots_sdk.certify import certify
    from bots_sdk.loader import load_bot_class

    bot_cls = load_bot_class(args.bot)
    report = certify(
        bot_cls,
        games=args.games,
        move_time_ms=args.move_time_ms,
        server=not args.skip_server,
        out=sys.stdout,
    )
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
