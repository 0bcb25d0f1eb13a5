"""`tienlen-bot check`: find a bot's problems before a ladder does.

Three stages, each reported as PASS / WARN / FAIL lines:
1. local games in every preset with 2, 3 and 4 seats, plus random mid-game positions
   (hands of 1-13 cards, any leader), against random opponents: exceptions and illegal
   moves are listed with the engine's reason;
2. timing: the slowest move against the ladder's time per move;
3. a protocol round trip: the bot plays a short table through the real gRPC client
   against a referee started for it on a loopback port (`tienlen-referee`, which comes
   with the platform; skipped, with a warning, where only the SDK is installed).
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from dataclasses import dataclass, field
from typing import TextIO

from bots_sdk.bot import Bot, View, normalize_move, play_safe_move
from bots_sdk.netcheck import RefereeUnavailable, referee_command, round_trip
from bots_sdk.rules import PRESETS, Game, IllegalMove, deal

__all__ = ["CheckReport", "certify"]


@dataclass
class CheckReport:
    lines: list[tuple[str, str]] = field(default_factory=list)  # (status, text)

    def add(self, status: str, text: str, out: TextIO | None) -> None:
        self.lines.append((status, text))
        if out is not None:
            print(f"{status:<5} {text}", file=out, flush=True)

    @property
    def passed(self) -> bool:
        return all(status != "FAIL" for status, _ in self.lines)


@dataclass
class _Probe:
    moves: int = 0
    times: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _play_game(game: Game, bot_seat: int, bot: Bot, probe: _Probe, label: str, rng: random.Random) -> None:
    loop: asyncio.AbstractEventLoop | None = None
    while not game.is_over:
        seat = game.to_move
        sv = game.view(seat)
        if seat != bot_seat:
            plays = sv.plays
            n = len(plays) + (1 if sv.can_pass else 0)
            i = rng.randrange(n)
            if i == len(plays):
                game.pass_turn()
            else:
                game.play(list(plays[i]))
            continue
        t0 = time.perf_counter()
        try:
            raw = bot.play(View(sv, "check", 0))
            if inspect.isawaitable(raw):
                loop = loop or asyncio.new_event_loop()
                raw = loop.run_until_complete(raw)
            cards = normalize_move(raw)
        except Exception as exc:
            probe.times.append(time.perf_counter() - t0)
            probe.errors.append(f"{label}: play() raised {type(exc).__name__}: {exc}")
            play_safe_move(game, sv)
            continue
        probe.times.append(time.perf_counter() - t0)
        probe.moves += 1
        try:
            if cards is None:
                game.pass_turn()
            else:
                game.play(list(cards))
        except IllegalMove as exc:
            shown = "pass" if cards is None else " ".join(map(str, cards))
            probe.errors.append(f"{label}: illegal move {shown}: {exc}")
            play_safe_move(game, sv)
    if loop is not None:
        loop.close()


def _distinct(errors: list[str]) -> list[str]:
    """One example per kind of error (the text after the position label)."""
    seen: set[str] = set()
    out = []
    for e in errors:
        kind = e.split(": ", 1)[-1].split(":")[0]
        if kind not in seen:
            seen.add(kind)
            out.append(e)
    return out


def _local_stage(
    bot_cls: type[Bot], games: int, report: CheckReport, out: TextIO | None
) -> _Probe:
    total = _Probe()
    rng = random.Random(2024)
    for preset in sorted(PRESETS):
        probe = _Probe()
        for players in (2, 3, 4):
            for g in range(games):
                seed = f"check/{preset}/{players}/{g}"
                seat = g % players
                label = f"{preset} {players}p game {g} seat {seat}"
                try:
                    bot = bot_cls()
                except Exception as exc:
                    report.add("FAIL", f"{bot_cls.__name__}() raised {type(exc).__name__}: {exc}", out)
                    return total
                if g % 2 == 0:
                    game = Game.from_seed(seed, players, preset=preset, starting=True)
                else:
                    # A random position: fewer cards per hand, any leader, not a starting game.
                    hands = [h[: rng.randint(1, 13)] for h in deal(seed, players)]
                    game = Game(hands, preset=preset, starting=False, leader=rng.randrange(players))
                    label += " (position)"
                _play_game(game, seat, bot, probe, label, rng)
        total.moves += probe.moves
        total.times.extend(probe.times)
        total.errors.extend(probe.errors)
        n = 3 * games
        if probe.errors:
            report.add("FAIL", f"preset {preset}: {len(probe.errors)} bad move(s) in {n} games", out)
            for line in _distinct(probe.errors)[:3]:
                report.add("", f"  e.g. {line}", out)
        else:
            report.add("PASS", f"preset {preset}: {n} games with 2, 3 and 4 seats, {probe.moves} moves, all legal", out)
    return total


def _timing_stage(probe: _Probe, move_time_ms: int, report: CheckReport, out: TextIO | None) -> None:
    if not probe.times:
        report.add("WARN", "timing: no moves measured", out)
        return
    times = sorted(probe.times)
    worst = times[-1] * 1000
    p99 = times[min(len(times) - 1, int(0.99 * len(times)))] * 1000
    mean = sum(times) / len(times) * 1000
    text = f"timing: mean {mean:.2f} ms, p99 {p99:.2f} ms, slowest {worst:.2f} ms per move (limit {move_time_ms} ms)"
    if worst > move_time_ms:
        report.add("FAIL", text + ": a move this slow is a timeout strike", out)
    elif worst > move_time_ms / 2:
        report.add("WARN", text + ": less than 2x headroom; network time counts too", out)
    else:
        report.add("PASS", text, out)


def _server_stage(bot_cls: type[Bot], report: CheckReport, out: TextIO | None) -> None:
    command = referee_command()
    if command is None:
        report.add("WARN", "protocol round trip skipped: no referee here (`tienlen-referee` "
                   "comes with the platform, `pip install -e .` in its checkout); the "
                   "local games above went through the same View and move checks", out)
        return
    try:
        result = asyncio.run(round_trip(bot_cls, command=command))
    except RefereeUnavailable as exc:
        report.add("FAIL", f"protocol round trip: the referee did not start: {exc}", out)
        return
    except Exception as exc:
        report.add("FAIL", f"protocol round trip: {type(exc).__name__}: {exc}", out)
        return
    status = "PASS" if result.ok else "FAIL"
    report.add(status, f"protocol round trip: {result.summary}", out)


def certify(
    bot_cls: type[Bot],
    *,
    games: int = 6,
    move_time_ms: int = 1000,
    server: bool = True,
    out: TextIO | None = None,
) -> CheckReport:
    report = CheckReport()
    if out is not None:
        print(f"checking {bot_cls.display_name()} ({bot_cls.__module__}.{bot_cls.__qualname__})", file=out)
    if "play" not in {n for c in bot_cls.__mro__[:-1] if c is not Bot for n in vars(c)}:
        report.add("FAIL", f"{bot_cls.__name__} does not define play(self, view)", out)
        return report
    probe = _local_stage(bot_cls, games, report, out)
    _timing_stage(probe, move_time_ms, report, out)
    if server and report.passed:
        _server_stage(bot_cls, report, out)
    if out is not None:
        verdict = "ready for a ladder" if report.passed else "NOT ready: fix the FAIL lines above"
        print(f"\n{bot_cls.display_name()}: {verdict}", file=out)
    return report
