"""`tienlen-bot fork`: what would my bot have played here? A stored game, asked again.

A bot author finds the move that lost a game, and wants to know what the new version plays
in exactly that position, and how the game goes on from there. `fork` rebuilds the
position before a move of a stored replay with the engine (``replay_game`` on the moves
before it: the one replay reader checks the file, the engine re-simulates it) and asks the
bot of the seat to move, with the views the engine gives that seat (``Game.view``: its own
hand, the public plays, the offers made to it; nothing of the other hands, and nothing
else a replay record may carry, such as another seat's notes). It is asked at each of its
earlier turns first, as in the game, so a bot that keeps state has it, and has seen the
offers it declined, which no later view shows. The answer is printed beside the stored
move. With ``play(..., play_on=True)`` the game is played out from there with bots in
every seat, every rule decided by the engine, the hidden hands being the replay's deal.

Moves are numbered as ``tienlen-bot replay`` prints them: 1 is the first entry of the
replay's moves, passes and declined offers included.

A game on the platform is read from its public replay download, which the platform refuses
while the deal is still being played elsewhere (``Sealed``): a fork never sees more than
anyone may.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bots_sdk.bot import Bot, GameInfo, GameResult, TableInfo, View, normalize_move, safe_move
from bots_sdk.cards import Card, format_cards, parse_cards
from bots_sdk.fairplay import _GAME_PATH
from bots_sdk.rules import Game, IllegalMove, classify
from bots_sdk.rules.replay import ReplayError, replay_game, replay_read

__all__ = [
    "Answer",
    "ForkError",
    "Fork",
    "Outcome",
    "Sealed",
    "ask",
    "play",
    "fork_at",
    "load_game",
    "replay_url_of",
]

TABLE_ID = "fork"
#: A replay download larger than this is refused (a real one is a few kilobytes).
MAX_DOWNLOAD_BYTES = 16 << 20
FETCH_TIMEOUT_S = 30.0


class ForkError(ValueError):
    """Something the user asked for cannot be forked; the message is one line."""


class Sealed(ForkError):
    """The platform withholds the game's replay (its deal is still being played)."""


# ------------------------------------------------------------------ reading the game


def replay_url_of(url: str) -> str:
    """The public replay download of a game URL on the platform (its page, its API entry,
    its proof or its download itself); any other URL is fetched as it is."""
    parts = urllib.parse.urlsplit(url)
    match = _GAME_PATH.match(parts.path)
    if not match:
        return url
    path = f"{match['prefix']}/games/{match['id']}/replay.json"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _fetch(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "tienlen-bot"})
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT_S) as response:
            body: bytes = response.read(MAX_DOWNLOAD_BYTES + 1)
    except urllib.error.HTTPError as exc:
        try:
            reason = _error_text(exc.read(4096)) or str(exc.reason)
        except Exception:  # no body to read
            reason = str(exc.reason)
        if exc.code == 403:  # the download's only refusal: the deal is still sealed
            raise Sealed(f"{url}: the platform refuses the replay: {reason}") from None
        if exc.code == 404:
            raise ForkError(f"{url}: no such game on the platform, or no stored replay (HTTP 404)") from None
        raise ForkError(f"{url}: HTTP {exc.code}: {reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ForkError(f"{url}: cannot fetch it ({getattr(exc, 'reason', exc)})") from None
    if len(body) > MAX_DOWNLOAD_BYTES:
        raise ForkError(f"{url}: the answer is larger than {MAX_DOWNLOAD_BYTES >> 20} MB: not a replay")
    return body


def _error_text(body: bytes) -> str:
    """The platform's reason, from a plain-text or a JSON (`detail`) error answer, on one
    line ("" for an HTML page: the status says more than its markup)."""
    text = body.decode("utf-8", "replace").strip()
    if text.startswith("<"):
        return ""
    try:
        doc = json.loads(text)
    except ValueError:
        pass
    else:
        if isinstance(doc, dict) and isinstance(doc.get("detail"), str):
            text = doc["detail"]
    return " ".join(text.split())[:300]


def load_game(source: str) -> tuple[dict[str, Any], str]:
    """The replay record of GAME (a file, or a game URL on the platform) and what to call it.

    Read by the one replay reader and re-simulated in full, so a corrupt or tampered file
    is refused here, naming the fault."""
    if source.startswith(("http://", "https://")):
        where = replay_url_of(source)
        text = _fetch(where)
    elif "://" in source:
        raise ForkError(f"{source}: only http:// and https:// URLs can be fetched")
    else:
        where = source
        try:
            text = Path(source).read_bytes()
        except FileNotFoundError:
            raise ForkError(f"replay file {source!r} not found") from None
        except OSError as exc:
            raise ForkError(f"{source}: {exc.strerror or exc}") from None
    try:
        doc = replay_read(text)
        replay_game(doc, check=True)
    except ReplayError as exc:
        raise ForkError(f"{where}: {exc}") from None
    if not doc["moves"]:
        raise ForkError(f"{where}: the game has no moves to fork from")
    return doc, where


# ------------------------------------------------------------------ the position


@dataclass(frozen=True)
class Fork:
    """The position before move `move` (1-based, as `tienlen-bot replay` numbers them)."""

    replay: dict[str, Any]
    move: int
    seat: int
    game: Game  # at the position, `seat` to move
    start: Game  # the game as dealt (what `on_game_start` tells each seat)

    @property
    def stored(self) -> dict[str, Any]:
        """The move the replay records here."""
        entry: dict[str, Any] = self.replay["moves"][self.move - 1]
        return entry

    @property
    def total_moves(self) -> int:
        return len(self.replay["moves"])


def _game_after(replay: dict[str, Any], moves: int) -> Game:
    """The engine's game after the first `moves` moves of `replay` (already checked whole)."""
    return replay_game({**replay, "moves": replay["moves"][:moves], "result": None}, check=False)


def fork_at(replay: dict[str, Any], move: int, seat: int | None = None) -> Fork:
    """The position before move `move`; with `seat`, that seat's first turn at or after it."""
    moves = replay["moves"]
    if not 1 <= move <= len(moves):
        raise ForkError(f"--move {move} is out of range: this game has moves 1 to {len(moves)}")
    players = replay["players"]
    index = move - 1
    if seat is not None:
        if not 0 <= seat < players:
            raise ForkError(f"--seat {seat} is not a seat of this {players}-player game (seats 0 to {players - 1})")
        index = next((i for i in range(index, len(moves)) if moves[i]["seat"] == seat), -1)
        if index < 0:
            raise ForkError(f"seat {seat} does not move at or after move {move}")
    game = _game_after(replay, index)
    return Fork(replay, index + 1, moves[index]["seat"], game, _game_after(replay, 0))


# ------------------------------------------------------------------ asking a bot


@dataclass(frozen=True)
class Answer:
    """What a bot answered: cards (None: a pass), or why it gave no legal move."""

    cards: tuple[Card, ...] | None
    error: str | None = None  # raised, or an illegal answer (then `cards` is the fallback)
    think_ms: float = 0.0
    hook_errors: tuple[str, ...] = ()  # a hook or an earlier turn raised
    #: The bot's earlier turns, asked again before the fork: (move number, whether it
    #: answered the stored move).
    earlier: tuple[tuple[int, bool], ...] = ()


@dataclass
class Outcome:
    """A game played out from the fork."""

    game: Game
    moves_played: int
    fallbacks: list[int]
    errors: list[str] = field(default_factory=list)


class _Table:
    """Bots at one forked table: their hooks called as the arena calls them, async bots
    awaited on one event loop. `errors`: (seat, what went wrong) in order."""

    def __init__(self, fork: Fork, bots: Sequence[Bot]) -> None:
        self.fork = fork
        self.bots = list(bots)
        self.errors: list[tuple[int, str]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        start = fork.start
        options = start.options.to_dict()
        for seat in range(len(self.bots)):
            self._hook(seat, "on_table_start", TableInfo(TABLE_ID, seat, start.players, start.preset, dict(options), 1))
            self._hook(seat, "on_game_start", GameInfo.of_game(start, table_id=TABLE_ID, game_index=0, seat=seat))

    def _await(self, value: Any) -> Any:
        if inspect.isawaitable(value):
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
            return self._loop.run_until_complete(value)
        return value

    def _hook(self, seat: int, name: str, arg: Any) -> None:
        bot = self.bots[seat]
        if getattr(type(bot), name) is getattr(Bot, name):
            return
        try:
            self._await(getattr(bot, name)(arg))
        except Exception as exc:
            self.errors.append((seat, f"seat {seat}: {name}() raised {type(exc).__name__}: {exc}"))

    def ask(self, game: Game) -> Answer:
        """The move of the seat to move of `game` (not played): its bot's answer if legal,
        else the fallback the referee plays (pass where allowed, else the weakest play)."""
        seat = game.to_move
        assert seat is not None
        view = View(game.view(seat), table_id=TABLE_ID)
        t0 = time.perf_counter()
        try:
            cards = normalize_move(self._await(self.bots[seat].play(view)))
        except Exception as exc:
            think = (time.perf_counter() - t0) * 1000
            return Answer(safe_move(view.can_pass, view.plays), f"play() raised {type(exc).__name__}: {exc}", think)
        think = (time.perf_counter() - t0) * 1000
        trial = game.copy()
        try:
            if cards is None:
                trial.pass_turn()
            else:
                trial.play(list(cards))
        except IllegalMove as exc:
            shown = "pass" if cards is None else format_cards(cards)
            return Answer(safe_move(view.can_pass, view.plays), f"illegal move {shown} ({exc})", think)
        return Answer(cards, None, think)

    def earlier_turns(self, seats: set[int]) -> list[tuple[int, bool]]:
        """Ask the bots of `seats` at each of their turns before the fork, as they were asked
        in the game (the offers they got included, which no later view shows), so a bot that
        keeps state between moves has it; the stored moves are played whatever they answer.
        Returns, for the forked seat's turns, (move number, whether it answered the stored
        move)."""
        fork = self.fork
        game = fork.start.copy()
        asked: list[tuple[int, bool]] = []
        for number, entry in enumerate(fork.replay["moves"][: fork.move - 1], 1):
            seat = entry["seat"]
            if seat in seats:
                answer = self.ask(game)
                if answer.error:
                    self.errors.append((seat, f"move {number}, seat {seat}: {answer.error}"))
                if seat == fork.seat:
                    asked.append((number, answer.error is None and same_move(answer.cards, stored_cards(entry))))
            if entry.get("pass"):
                game.pass_turn(seat=seat)
            else:
                game.play(entry["cards"], seat=seat)
        return asked

    def play_out(self, first: Answer) -> Outcome:
        """Play the game on from the fork, `first` being the forked seat's move."""
        game = self.fork.game.copy()
        fallbacks = [0] * len(self.bots)
        errors: list[str] = []
        played = 0
        answer = first
        while True:
            seat = game.to_move
            assert seat is not None
            if answer.error:
                fallbacks[seat] += 1
                errors.append(f"move {self.fork.move + played}, seat {seat}: {answer.error}; fallback played")
            if answer.cards is None:
                game.pass_turn()
            else:
                game.play(list(answer.cards))
            played += 1
            if game.is_over:
                break
            answer = self.ask(game)
        replay = game.replay()
        order, points = tuple(game.finishing_order), tuple(game.points)
        for s in range(len(self.bots)):
            self._hook(s, "on_game_end", GameResult(TABLE_ID, 0, s, order, points, game.instant_winner, replay))
        return Outcome(game, played, fallbacks, [text for _, text in self.errors] + errors)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()


class _Silent(Bot):
    """A seat nobody asks (only the forked seat plays when no game is continued)."""

    def play(self, view: View) -> None:
        raise AssertionError("only the forked seat is asked")


def _seed_random(fork: Fork, stage: str) -> None:
    # Bots using `random` answer the same every time (as the arena seeds each game); seeded
    # again at the fork, so its answer is the same with or without --continue.
    key = f"{fork.replay.get('seed') or ''}/fork/{fork.move}/{stage}"
    random.seed(zlib.crc32(key.encode()))


def play(fork: Fork, bots: Sequence[Bot | None], *, play_on: bool = False) -> tuple[Answer, Outcome | None]:
    """What the forked seat's bot (`bots[fork.seat]`) plays at the fork, told of the table
    and the game and asked at its earlier turns (`_Table.earlier_turns`) as on the
    referee; with `play_on`, the game played out from there by `bots[s]` in seat `s`
    (every one of them asked at its earlier turns first), the engine deciding every rule,
    a bot that raises or answers an illegal move getting the referee's fallback.
    Without `play_on` the other entries are not used (None will do)."""
    seated: list[Bot] = [b if b is not None and (play_on or s == fork.seat) else _Silent()
                         for s, b in enumerate(bots)]
    if play_on and any(b is None for b in bots):
        raise ValueError("every seat needs a bot to play the game out")
    _seed_random(fork, "earlier turns")
    table = _Table(fork, seated)
    try:
        earlier = table.earlier_turns(set(range(len(seated))) if play_on else {fork.seat})
        mine = tuple(text for seat, text in table.errors if seat == fork.seat)
        _seed_random(fork, "fork")
        answer = table.ask(fork.game)
        answer = Answer(answer.cards, answer.error, answer.think_ms, mine, tuple(earlier))
        return answer, table.play_out(answer) if play_on else None
    finally:
        table.close()


def ask(fork: Fork, bot: Bot) -> Answer:
    """What `bot` plays at the fork in the seat to move (see `play`)."""
    bots: list[Bot | None] = [None] * fork.start.players
    bots[fork.seat] = bot
    return play(fork, bots)[0]


# ------------------------------------------------------------------ text


def describe_move(cards: Sequence[Card] | None, *, offer: str | None, leading: bool, preset: str,
                  symbols: bool = False) -> str:
    """ "plays 9H 9D (pair)", "leads ...", "passes", "declines chop": as `tienlen-bot replay`."""
    if cards is None:
        return f"declines {offer.replace('_', ' ')}" if offer else "passes"
    combo = classify(list(cards), preset=preset)
    kind = combo.kind.replace("_", " ") if combo else "?"
    verb = offer.replace("_", " ") if offer else ("leads" if leading else "plays")
    return f"{verb} {format_cards(cards, symbols=symbols)} ({kind})"


def stored_cards(entry: dict[str, Any]) -> tuple[Card, ...] | None:
    return None if entry.get("pass") else tuple(parse_cards(entry.get("cards") or []))


def same_move(a: Sequence[Card] | None, b: Sequence[Card] | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and sorted(a) == sorted(b))


def position_lines(fork: Fork, *, symbols: bool = False) -> list[str]:
    """What the seat to move sees, in a few lines."""
    view = fork.game.view(fork.seat)
    lines = [f"hand ({len(view.hand)}): {format_cards(view.hand, symbols=symbols)}"]
    lines.append("cards left: " + "  ".join(f"seat {s} {n}" for s, n in enumerate(view.card_counts)))
    if view.table is None:
        lines.append(f"table: empty (seat {fork.seat} leads)")
    else:
        cards = parse_cards(view.table["cards"])
        lines.append(f"table: seat {view.table['seat']} {format_cards(cards, symbols=symbols)} "
                     f"({view.table['kind'].replace('_', ' ')})")
    if view.offer:
        lines.append(f"offer: {view.offer.replace('_', ' ')}")
    return lines


# ------------------------------------------------------------------ the command


def _load(spec: str) -> tuple[Bot, str]:
    from bots_sdk.loader import BotLoadError, describe_spec, load_bot_class

    cls = load_bot_class(spec)
    try:
        bot = cls()
    except Exception as exc:
        raise BotLoadError(f"{cls.__name__}() failed: {type(exc).__name__}: {exc} "
                           "(a bot class must be constructible without arguments)") from None
    return bot, describe_spec(spec)


def lineup(players: int, seat: int, bot: str, others: Sequence[str]) -> list[str]:
    """The bot spec of every seat for `--continue`: `bot` at the forked seat; `others` is one
    bot per seat (the forked seat's entry is replaced), one per other seat in seat order,
    or one for every other seat (default: random)."""
    others = list(others) or ["random"]
    if len(others) == players:
        specs = list(others)
    elif len(others) == players - 1:
        specs = others[:seat] + [bot] + others[seat:]
    elif len(others) == 1:
        specs = others * players
    else:
        raise ForkError(f"--bots names {len(others)} bots for this {players}-player game: name one per seat "
                        f"({players}), one per other seat ({players - 1}) or one for all the others")
    specs[seat] = bot
    return specs


def run(source: str, move: int, bot_spec: str, *, seat: int | None = None, play_on: bool = False,
        others: Sequence[str] = (), symbols: bool = False, as_json: bool = False) -> int:
    """`tienlen-bot fork`: print the bot's answer beside the stored move (and with
    `play_on`, the game played out from there). Exit status 1 when the bot gave no legal
    answer at the fork; errors in the input raise ForkError / BotLoadError."""
    replay, where = load_game(source)
    fork = fork_at(replay, move, seat)
    specs = lineup(fork.start.players, fork.seat, bot_spec, others) if play_on else [bot_spec]
    loaded = [_load(spec) for spec in specs]
    if play_on:
        answer, outcome = play(fork, [b for b, _ in loaded], play_on=True)
    else:
        answer, outcome = ask(fork, loaded[0][0]), None
    report = _Report(fork, where, answer, outcome, [n for _, n in loaded], symbols)
    if as_json:
        print(json.dumps(report.doc(), indent=2))
    else:
        report.print(asked_move=move)
    return 1 if answer.error else 0


class _Report:
    """What `run` prints: the position, both moves, and the game played on."""

    def __init__(self, fork: Fork, where: str, answer: Answer, outcome: Outcome | None,
                 names: list[str], symbols: bool) -> None:
        self.fork, self.where, self.answer, self.outcome, self.symbols = fork, where, answer, outcome, symbols
        self.names = names
        self.name = names[fork.seat] if outcome is not None else names[0]
        self.view = fork.game.view(fork.seat)
        self.played = stored_cards(fork.stored)
        self.same = answer.error is None and same_move(answer.cards, self.played)
        self.stored_result: dict[str, Any] = fork.replay.get("result") or {}

    def text(self, cards: Sequence[Card] | None) -> str:
        return describe_move(cards, offer=self.view.offer, leading=self.view.table is None,
                             preset=self.fork.start.preset, symbols=self.symbols)

    def doc(self) -> dict[str, Any]:
        fork, answer, outcome = self.fork, self.answer, self.outcome

        def names(cards: Sequence[Card] | None) -> list[str] | None:
            return None if cards is None else [str(c) for c in cards]

        doc: dict[str, Any] = {
            "game": self.where,
            "moves": fork.total_moves,
            "move": fork.move,
            "seat": fork.seat,
            "hand": names(self.view.hand),
            "played": {"cards": names(self.played), "text": self.text(self.played)},
            "bot": {
                "name": self.name,
                "cards": None if answer.error else names(answer.cards),
                "text": None if answer.error else self.text(answer.cards),
                "error": answer.error,
                "fallback": {"cards": names(answer.cards), "text": self.text(answer.cards)} if answer.error else None,
                "hook_errors": list(answer.hook_errors),
                "think_ms": round(answer.think_ms, 3),
                "earlier_turns": [{"move": m, "same": ok} for m, ok in answer.earlier],
            },
            "same": self.same,
        }
        if outcome is not None:
            g = outcome.game
            doc["continued"] = {
                "bots": self.names,
                "moves_played": outcome.moves_played,
                "moves": g.history[fork.move - 1:],  # as a replay's moves, from the fork on
                "finishing_order": list(g.finishing_order),
                "places": places_of(g.finishing_order, g.players),
                "points": list(g.points),
                "fallbacks": outcome.fallbacks,
                "errors": outcome.errors,
            }
            doc["stored"] = {"finishing_order": self.stored_result.get("finishing_order"),
                             "points": self.stored_result.get("points")}
        return doc

    def print(self, *, asked_move: int) -> None:
        fork, answer, name = self.fork, self.answer, self.name
        later = f" (its first turn at or after move {asked_move})" if fork.move != asked_move else ""
        print(f"{self.where}: preset {fork.start.preset}, {fork.start.players} players; "
              f"move {fork.move} of {fork.total_moves}, seat {fork.seat} to move{later}")
        for line in position_lines(fork, symbols=self.symbols):
            print(f"  {line}")
        width = max(len("played"), len(name)) + 1
        print(f"{'played:':<{width}}  {self.text(self.played)}")
        if answer.error:
            print(f"{name + ':':<{width}}  {answer.error}; the referee would play the fallback: "
                  f"{self.text(answer.cards)}")
        else:
            verdict = "the same move" if self.same else "a different move"
            print(f"{name + ':':<{width}}  {self.text(answer.cards)}   ({verdict}, {answer.think_ms:.1f} ms)")
        if answer.earlier:
            agreed = sum(ok for _, ok in answer.earlier)
            first = next((m for m, ok in answer.earlier if not ok), None)
            print(f"{'':<{width}}  (asked at its {len(answer.earlier)} earlier turns too, it answered the "
                  f"stored move at {agreed}" + (f"; first difference: move {first})" if first else ")"))
        for line in answer.hook_errors:
            print(f"  {line}")
        if self.outcome is not None:
            _print_outcome(fork, self.outcome, self.names, self.stored_result)


def places_of(order: Sequence[int], players: int) -> list[int | None]:
    """The place (1 = won) of each seat in a finishing order (None: not placed)."""
    return [list(order).index(s) + 1 if s in order else None for s in range(players)]


def _print_outcome(fork: Fork, outcome: Outcome, names: list[str], stored: dict[str, Any]) -> None:
    g = outcome.game
    print()
    print(f"played out from move {fork.move} ({outcome.moves_played} moves), seat {fork.seat} forked:")
    places = places_of(g.finishing_order, g.players)
    stored_points = stored.get("points")
    stored_order = stored.get("finishing_order")
    stored_places = places_of(stored_order, g.players) if isinstance(stored_order, list) else None
    width = max(len(n) for n in names)
    print(f"  {'seat':<6}  {'bot':<{width}}  {'place':>5}  {'points':>6}   stored: place, points")
    for s, name in enumerate(names):
        place = places[s]
        was = "-"
        if isinstance(stored_points, list) and stored_places is not None and s < len(stored_points):
            was = f"{stored_places[s] or '-'}, {stored_points[s]:+d}"
        print(f"  {'seat ' + str(s):<6}  {name:<{width}}  {place if place is not None else '-':>5}  "
              f"{g.points[s]:>+6d}   {was}")
    if g.instant_winner is not None:
        print(f"  instant win by seat {g.instant_winner}")
    for line in outcome.errors:
        print(f"  {line}")
