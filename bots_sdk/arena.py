"""Local games between bots with the referee's engine, no server: the author's test bench.

Deals, seat rotation and the fallback for a failing bot follow the referee
(docs/protocol.md): in duplicate mode, set `d` deals from `"<seed>/set/<d>"` and seat `s` of
rotation `r` is played by lineup entry `(s + r) % n` (rotations that would repeat a seating
exactly, as `A B A B` does, are played once); without duplicates, game `i` deals
from `"<seed>/game/<i>"` and the lineup is rotated by `i % n` so seats stay balanced. Every
arena game is a starting game, so games are independent and results do not depend on how
they are split between processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import os
import random
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from bots_sdk.bot import (
    Bot,
    GameInfo,
    GameResult,
    TableInfo,
    TableResult,
    normalize_move,
    play_safe_move,
)
from bots_sdk.cards import Card
from bots_sdk.liveview import COUNTS_REFS, LiveView, seal
from bots_sdk.rules import Game
from bots_sdk.rules.notes import with_notes, without_notes
from bots_sdk.stats import GameRecord

_HOOKS = ("on_table_start", "on_game_start", "on_game_end", "on_table_end")

__all__ = ["ArenaConfig", "ArenaResult", "GameTask", "Lineup", "play_task", "run_arena"]


@dataclass(frozen=True, slots=True)
class GameTask:
    index: int  # game number within the arena run
    unit: int  # duplicate set (or game) index: the sampling unit of the statistics
    rotation: int
    seed: str  # deal seed


def unique_names(names: Sequence[str]) -> list[str]:
    """Labels for the results table: a second bot called "greedy" becomes "greedy#2"."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


@dataclass(frozen=True)
class Lineup:
    """Who plays: entrants (distinct bot specs) and, per seat of rotation 0, an entrant."""

    specs: tuple[str, ...]  # one per entrant
    names: tuple[str, ...]
    seats: tuple[int, ...]  # entrant index per seat, rotation 0

    @classmethod
    def build(cls, specs: Sequence[str], players: int, names: Sequence[str] | None = None) -> Lineup:
        """Repeating a spec puts the same bot in several seats (one row in the results);
        fewer specs than seats are cycled to fill the table: `A B` at 4 seats is A B A B."""
        if not specs:
            raise ValueError("name at least one bot")
        if len(specs) > players:
            raise ValueError(f"{len(specs)} bots for {players} seats; use --players {len(specs)}")
        unique: list[str] = []
        for s in specs:
            if s not in unique:
                unique.append(s)
        seats = tuple(unique.index(specs[i % len(specs)]) for i in range(players))
        if names is None:
            from bots_sdk.loader import describe_spec

            names = unique_names([describe_spec(s) for s in unique])
        return cls(tuple(unique), tuple(names), seats)

    def entrants_for(self, rotation: int) -> tuple[int, ...]:
        n = len(self.seats)
        return tuple(self.seats[(s + rotation) % n] for s in range(n))

    def rotations(self) -> list[int]:
        """The rotations that give distinct seatings: all n for `A B C D`, but only 0 and 1
        for `A B A B`, whose rotations 2 and 3 would replay rotations 0 and 1 exactly."""
        seen: set[tuple[int, ...]] = set()
        out = []
        for r in range(len(self.seats)):
            seating = self.entrants_for(r)
            if seating not in seen:
                seen.add(seating)
                out.append(r)
        return out


@dataclass(frozen=True)
class ArenaConfig:
    lineup: Lineup
    games: int = 100
    preset: str = "south"
    players: int = 4
    duplicate: bool = False
    seed: str = "arena"
    jobs: int = 1
    replays_dir: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def tasks(self) -> list[GameTask]:
        n = self.players
        if self.duplicate:
            rotations = self.lineup.rotations()
            k = len(rotations)
            sets = -(-self.games // k)
            return [
                GameTask(d * k + j, d, r, f"{self.seed}/set/{d}")
                for d in range(sets)
                for j, r in enumerate(rotations)
            ]
        return [GameTask(i, i, i % n, f"{self.seed}/game/{i}") for i in range(self.games)]


@dataclass
class ArenaResult:
    config: ArenaConfig
    records: list[GameRecord]
    elapsed_s: float
    errors: list[str]  # one line per fallback move: what the bot did wrong

    @property
    def games_per_second(self) -> float:
        return len(self.records) / self.elapsed_s if self.elapsed_s else 0.0


# ------------------------------------------------------------------ one game


class _Labels:
    """"game 12 seat 3 (greedy)" for error lines, built only when an error needs one."""

    __slots__ = ("entrants", "index", "names")

    def __init__(self, index: int, entrants: tuple[int, ...], names: tuple[str, ...]) -> None:
        self.index, self.entrants, self.names = index, entrants, names

    def __getitem__(self, seat: int) -> str:
        return f"game {self.index} seat {seat} ({self.names[self.entrants[seat]]})"


class _Runner:
    """Plays arena games in one process; bots are loaded once per process."""

    def __init__(self, config: ArenaConfig) -> None:
        from bots_sdk.loader import load_bot_class
        from bots_sdk.rules import PRESETS, IllegalMove

        self.config = config
        self.classes: list[type[Bot]] = [load_bot_class(s) for s in config.lineup.specs]
        for cls in self.classes:  # fail early, in one line, on a constructor that needs args
            try:
                cls()
            except Exception as exc:
                from bots_sdk.loader import BotLoadError

                raise BotLoadError(
                    f"{cls.__name__}() failed: {type(exc).__name__}: {exc} "
                    "(a bot class must be constructible without arguments)"
                ) from exc
        # Hooks a class leaves as the base no-op are not called (nor their arguments built):
        # a replay costs a fifth of a random game.
        self.hooks = [
            {h for h in _HOOKS if getattr(cls, h) is not getattr(Bot, h)} for cls in self.classes
        ]
        self.Game = Game
        # What TableInfo.options carries, as on the referee: every option value.
        self.options = {**PRESETS[config.preset].to_dict(), **config.options}
        self.IllegalMove = IllegalMove
        self._loop: asyncio.AbstractEventLoop | None = None

    def _await(self, value: Any) -> Any:
        if inspect.isawaitable(value):
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
            return self._loop.run_until_complete(value)
        return value

    def _hook(self, bot: Bot, name: str, arg: Any, errors: list[str], label: str) -> None:
        try:
            self._await(getattr(bot, name)(arg))
        except Exception as exc:
            errors.append(f"{label}: {name}() raised {type(exc).__name__}: {exc}")

    def play(self, task: GameTask, errors: list[str]) -> tuple[GameRecord, dict[str, Any] | None]:
        cfg = self.config
        n = cfg.players
        entrants = cfg.lineup.entrants_for(task.rotation)
        names = cfg.lineup.names
        # Bots using `random` are reproducible (an int seed: hashing a str costs 14 us).
        random.seed(zlib.crc32(task.seed.encode()) * 8 + task.rotation)
        game = self.Game.from_seed(
            task.seed, n, preset=cfg.preset, starting=True, options=cfg.options or None
        )
        table_id = f"arena-{task.index}"
        bots = [self.classes[e]() for e in entrants]
        hooks = [self.hooks[e] for e in entrants]
        labels = _Labels(task.index, entrants, names)
        for s, bot in enumerate(bots):
            if "on_table_start" in hooks[s]:
                info = TableInfo(table_id, s, n, cfg.preset, dict(self.options), 1)
                self._hook(bot, "on_table_start", info, errors, labels[s])
            if "on_game_start" in hooks[s]:
                started = GameInfo.of_game(game, table_id=table_id, game_index=0, seat=s)
                self._hook(bot, "on_game_start", started, errors, labels[s])
        fallbacks = [0] * n  # moves answered with the fallback move (as the SDK client does)
        rejected = [0] * n  # illegal answers, which the referee would reject
        think = [0.0] * n
        moves = [0] * n
        notes: list[str | None] = []  # one per move of the record (None: no note)
        perf = time.perf_counter
        getrefcount = sys.getrefcount if COUNTS_REFS else lambda _: 1 << 30
        IllegalMove = self.IllegalMove
        view: LiveView | None = None
        while not game.is_over:
            if view is None:
                view = LiveView(game, table_id)
            else:
                # Nobody but us holds the previous view (checked below): point it at the new
                # position instead of building an object per move.
                view.renew(game, table_id)
            seat = view.seat
            bot = bots[seat]
            t0 = perf()
            cards: Sequence[Card | str | int] | None
            try:
                raw = bot.play(view)
                tr = type(raw)
                if (tr is list or tr is tuple) and raw:
                    # the engine checks the items (Card, "3S" or 0..51)
                    cards = cast(Sequence[Card | str | int], raw)
                elif raw is None:
                    cards = None
                else:
                    if inspect.isawaitable(raw):
                        raw = self._await(raw)
                    cards = normalize_move(raw)
            except Exception as exc:
                think[seat] += perf() - t0
                moves[seat] += 1
                fallbacks[seat] += 1
                errors.append(f"{labels[seat]}: play() raised {type(exc).__name__}: {exc}; fallback played")
                play_safe_move(game, view)
                notes.append(None)
                seal(view, held=1)
                view = None
                continue
            think[seat] += perf() - t0
            moves[seat] += 1
            note = view.noted
            # liveview.seal(), inlined: if the bot kept the view (more references than our
            # variable and getrefcount's argument), it gets its snapshot now and the next
            # move a new object.
            if getrefcount(view) > 2:
                view.snapshot()
                view = None
            try:
                if cards is None:
                    game.pass_turn()
                else:
                    game.play(cards)
                notes.append(note)
            except IllegalMove as exc:
                fallbacks[seat] += 1
                rejected[seat] += 1
                shown = "pass" if cards is None else " ".join(str(c) for c in cards)
                errors.append(f"{labels[seat]}: illegal move {shown} (the referee rejects it: {exc}); fallback played")
                play_safe_move(game, game.view(seat))
                notes.append(None)
        points = tuple(game.points)
        order = tuple(game.finishing_order)
        want_replay = cfg.replays_dir is not None or any("on_game_end" in h for h in hooks)
        replay = with_notes(game.replay(), notes) if want_replay else None
        self._end_hooks(bots, hooks, GameResult(table_id, 0, 0, order, points, game.instant_winner, replay),
                        errors, labels)
        record = GameRecord(
            unit=task.unit,
            entrants=entrants,
            points=points,
            finishing_order=order,
            fallbacks=tuple(fallbacks),
            rejected=tuple(rejected),
            think_s=tuple(think),
            moves=tuple(moves),
        )
        return record, replay


    def _end_hooks(self, bots: list[Bot], hooks: list[Any], ended: GameResult, errors: list[str],
                   labels: _Labels) -> None:
        """Tell each bot that asked how the game (`ended`, as seat 0 sees it) and the
        one-game table went. A bot sees its own notes in the replay, as on the platform,
        never another seat's."""
        for s, bot in enumerate(bots):
            if "on_game_end" in hooks[s]:
                mine = None if ended.replay is None else without_notes(ended.replay, keep_seats=(s,))
                result = dataclasses.replace(ended, seat=s, replay=mine)
                self._hook(bot, "on_game_end", result, errors, labels[s])
            if "on_table_end" in hooks[s]:
                table = TableResult(ended.table_id, s, ended.points, 1)
                self._hook(bot, "on_table_end", table, errors, labels[s])


def _replay_name(task: GameTask) -> str:
    return f"game-{task.index:06d}.json"


def _write_replay(directory: Path, task: GameTask, replay: dict[str, Any]) -> None:
    # Exactly the engine's replay JSON, so the platform's viewer and replay_game() read it.
    (directory / _replay_name(task)).write_text(json.dumps(replay, separators=(",", ":")))


def _write_index(directory: Path, config: ArenaConfig, tasks: Sequence[GameTask]) -> None:
    """index.json: which bot sat where in each replay (replays themselves name no bots)."""
    lineup = config.lineup
    games = [
        {
            "file": _replay_name(t),
            "seed": t.seed,
            "unit": t.unit,
            "rotation": t.rotation,
            "seats": [lineup.names[e] for e in lineup.entrants_for(t.rotation)],
        }
        for t in tasks
    ]
    doc = {
        "schema": "tienlen.arena-index/1",
        "preset": config.preset,
        "players": config.players,
        "duplicate": config.duplicate,
        "seed": config.seed,
        "bots": dict(zip(lineup.names, lineup.specs, strict=True)),
        "games": games,
    }
    (directory / "index.json").write_text(json.dumps(doc, indent=1))


# ------------------------------------------------------------------ worker processes

_WORKER: _Runner | None = None


def _worker_init(config: ArenaConfig) -> None:
    global _WORKER
    _WORKER = _Runner(config)


def _pool_worker_init(config: ArenaConfig) -> None:
    # Ctrl-C is the parent's to handle: workers without it stop without a traceback each.
    # The parent started them with SIGINT blocked (see `_sigint_blocked`), so one that
    # arrived between the fork and here stays pending and is dropped by SIG_IGN.
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _worker_init(config)


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT held back while worker processes start: they inherit the mask, so a Ctrl-C
    during their start-up cannot interrupt one before it ignores SIGINT; the parent gets
    it as soon as the workers are started."""
    import signal

    if not hasattr(signal, "pthread_sigmask"):  # Windows: no signal masks
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def play_task(tasks: Sequence[GameTask]) -> tuple[list[GameRecord], list[str]]:
    """Play a chunk of games in a worker process (also used in-process with --jobs 1)."""
    assert _WORKER is not None
    records: list[GameRecord] = []
    errors: list[str] = []
    cfg = _WORKER.config
    for task in tasks:
        record, replay = _WORKER.play(task, errors)
        records.append(record)
        if cfg.replays_dir is not None and replay is not None:
            _write_replay(cfg.replays_dir, task, replay)
    return records, errors


def _chunks(tasks: list[GameTask], size: int) -> Iterator[list[GameTask]]:
    for i in range(0, len(tasks), size):
        yield tasks[i : i + size]


def run_arena(
    config: ArenaConfig,
    progress: Callable[[int, int], None] | None = None,
    stop: Callable[[list[GameRecord]], bool] | None = None,
) -> ArenaResult:
    """Play the games of `config` and return the records (sorted by deal unit).

    `stop(records)` is asked after each chunk of whole deal units (duplicate sets stay
    whole); when it returns True the remaining games are not played (sequential tests)."""
    if config.players not in (2, 3, 4):
        raise ValueError(f"--players must be 2, 3 or 4, got {config.players}")
    if config.games < 1:
        raise ValueError("--games must be at least 1")
    from bots_sdk.rules import PRESETS

    if config.preset not in PRESETS:
        raise ValueError(f"unknown preset {config.preset!r} (known: {', '.join(sorted(PRESETS))})")
    if config.replays_dir is not None:
        config.replays_dir.mkdir(parents=True, exist_ok=True)
    tasks = config.tasks()
    total = len(tasks)
    unit = len(config.lineup.rotations()) if config.duplicate else 1
    if config.jobs > 1:
        _Runner(config)  # load and construct the bots here first: errors as one line
    records: list[GameRecord] = []
    errors: list[str] = []
    started = time.perf_counter()
    if progress:
        progress(0, total)

    def collect(recs: list[GameRecord], errs: list[str]) -> bool:
        records.extend(recs)
        errors.extend(errs)
        if progress:
            progress(len(records), total)
        return stop is not None and stop(records)

    if config.jobs <= 1:
        _worker_init(config)
        # Small chunks keep the progress bar moving without measurable overhead.
        size = unit * max(1, min(50, total // 100) // unit)
        for chunk in _chunks(tasks, size):
            if collect(*play_task(chunk)):
                break
    else:
        jobs = min(config.jobs, os.cpu_count() or config.jobs, total)
        size = unit * max(1, min(25, total // (jobs * 8)) // unit)  # small: Ctrl-C waits for running chunks
        # Results come back in task order; the result does not depend on the split since
        # every game is seeded from its own task.
        pool = ProcessPoolExecutor(
            max_workers=jobs, initializer=_pool_worker_init, initargs=(config,)
        )
        try:
            with _sigint_blocked():  # map submits every chunk now, starting every worker
                results = pool.map(play_task, list(_chunks(tasks, size)))
            for recs, errs in results:
                if collect(recs, errs):
                    break
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    elapsed = time.perf_counter() - started
    if config.replays_dir is not None:
        _write_index(config.replays_dir, config, tasks[: len(records)])
    records.sort(key=lambda r: (r.unit, r.entrants))
    return ArenaResult(config, records, elapsed, errors)


class ProgressBar:
    """A plain stderr progress bar: games done, rate and time left. Redraws at most ten
    times a second, and only on a terminal (CI logs stay readable)."""

    def __init__(self, stream: Any = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.started = time.perf_counter()
        self.last = 0.0
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done < total and now - self.last < 0.1:
            return
        self.last = now
        elapsed = now - self.started
        rate = done / elapsed if elapsed > 0 else 0.0
        left = (total - done) / rate if rate > 0 else 0.0
        filled = int(self.width * done / total) if total else self.width
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(
            f"\r[{bar}] {done}/{total} games  {rate:6.1f} games/s  {left:5.0f} s left "
        )
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
