"""Turn a stored replay into the per-step states the replay viewer draws.

The referee's engine is the authority on the rules, so the table, whose turn it is, the
pass locks and the finishing order at every step come from re-simulating the replay with
`bots_sdk.rules`, never from rules re-implemented in JavaScript. The viewer only derives
the hands (initial hands minus the cards played). If a replay cannot be re-simulated
(an engine version mismatch, a damaged record) the page still shows the moves, with a
simpler table state and a warning, instead of failing.
"""

from __future__ import annotations

import logging
from typing import Any

from bots_sdk.cards import CARD_TEXT
from bots_sdk.rules import PRESETS, Game, GameState, Options, classify
from bots_sdk.rules.notes import NOTE_KEY

log = logging.getLogger(__name__)


def _kind_of(cards: list[str]) -> str | None:
    try:
        combo = classify(cards)
    except ValueError:
        return None
    return None if combo is None else combo.kind


def replay_frames(replay: dict[str, Any], *, names: list[str], timing: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the viewer's JavaScript needs, as one JSON-ready dict (see docs/web.md)."""
    raw_hands = replay.get("hands") if isinstance(replay.get("hands"), list) else []
    hands = [[str(c) for c in h] for h in raw_hands if isinstance(h, list)]
    players = replay.get("players") if isinstance(replay.get("players"), int) else len(hands)
    moves_in = replay.get("moves") if isinstance(replay.get("moves"), list) else []
    result = replay.get("result") if isinstance(replay.get("result"), dict) else {}
    dealt = {c for h in hands for c in h}
    undealt = replay.get("undealt")
    frames: dict[str, Any] = {
        "players": players,
        "names": names[:players],
        "preset": replay.get("preset"),
        "seed": replay.get("seed"),
        "starting": replay.get("starting"),
        "hands": hands,
        # newer replays list the undealt cards; older ones leave them to be worked out
        "undealt": [str(c) for c in undealt] if isinstance(undealt, list) else [c for c in CARD_TEXT if c not in dealt] if dealt else [],
        "result": result,
        "payments": [payment_row(p, names) for p in result.get("payments") or [] if isinstance(p, dict)],
        "warning": None,
    }
    kind = None
    try:
        moves, states, kind = _simulate(replay, players)
    except Exception as exc:
        log.warning("replay could not be re-simulated: %s", exc)
        frames["warning"] = f"This replay could not be re-simulated by the current engine ({exc}); the table view is simplified."
        moves, states = _plain(moves_in, players)
    frames["moves"] = moves
    frames["states"] = states
    _attach_timing(moves, timing)
    frames["has_notes"] = _attach_notes(moves, moves_in)
    frames["places"] = final_places(result, players)
    if result.get("instant_winner") is not None:
        w = result["instant_winner"]
        what = f": {INSTANT_WIN_KINDS.get(kind, kind.replace('_', ' '))}" if kind else ""
        frames["instant_win_text"] = f"Instant win (tới trắng){what}, for {names[w] if w < len(names) else w}"
    return frames


# docs/rules.md §7, "Instant wins"
INSTANT_WIN_KINDS = {
    "four_threes": "four 3s",
    "three_pairs_with_start": "three pairs 3-3-4-4-5-5 with 3♠",
    "dragon": "a dragon (one card of each rank 3 to A)",
    "five_pair_sequence": "five consecutive pairs",
    "six_pairs": "six pairs",
    "four_twos": "all four 2s",
    "twelve_one_colour": "twelve cards of one colour",
    "four_triples": "four triples",
    "two_fours": "two fours of a kind",
}


def final_places(result: dict[str, Any], players: int) -> list[int] | None:
    """Each seat's place in the result: its rank in the finishing order, except that the
    seats marked tied share the last place (docs/rules.md §7: after an instant win the others
    are listed in turn order but all last). None when the result has no finishing order."""
    order, tied = result.get("finishing_order"), set(result.get("tied") or [])
    if not isinstance(order, list) or sorted(order) != list(range(players)):
        return None
    return [players if s in tied else order.index(s) + 1 for s in range(players)]


REASONS = {
    "place": "finishing places",
    "thua_nhi": "runner-up pays (thua nhì)",
    "frozen": "frozen (cóng)",
    "stuck": "stuck with 2s or bombs (thối)",
    "chop": "chop chain (chặt)",
    "instant_win": "instant win (tới trắng)",
    "den_bai": "paying for the table (đền bài)",
    "den_ca_lang": "paying everyone (đền cả làng)",
    "blind_three": "blind three (ba mù)",
    "four_pair_bonus": "four-pair bonus",
}


def payment_row(p: dict[str, Any], names: list[str]) -> dict[str, Any]:
    def name(i: Any) -> str:
        return names[i] if isinstance(i, int) and 0 <= i < len(names) else str(i)

    reason = str(p.get("reason", ""))
    key = next((k for k in REASONS if reason.startswith(k)), None)
    return {**p, "from_name": name(p.get("from")), "to_name": name(p.get("to")), "reason_text": REASONS[key] if key else reason.replace("_", " ")}


def _attach_timing(moves: list[dict[str, Any]], timing: dict[str, Any] | None) -> None:
    """Think time and referee fallbacks per move, from the referee's timing log
    (tienlen.timing/1), when it lines up with the moves (one entry per move)."""
    log_moves = (timing or {}).get("moves") or []
    if len(log_moves) != len(moves):
        return
    for move, t in zip(moves, log_moves, strict=True):
        if t.get("seat") != move["seat"]:
            return
    for move, t in zip(moves, log_moves, strict=True):
        ms = t.get("thinking_ms", t.get("elapsed_ms"))
        if isinstance(ms, int | float):
            move["ms"] = round(float(ms), 1)
        if t.get("fallback"):
            move["fallback"] = str(t["fallback"])
        if (t.get("attempts") or 1) > 1:
            move["attempts"] = int(t["attempts"])


def _attach_notes(moves: list[dict[str, Any]], moves_in: list[Any]) -> bool:
    """Each move's note as the replay has it (the caller passed the replay through
    `sealing.replay_for`, so only the viewer's own bots' notes and published ones are
    left); True if any."""
    if len(moves_in) != len(moves):
        return False
    found = False
    for move, m in zip(moves, moves_in, strict=True):
        note = m.get(NOTE_KEY) if isinstance(m, dict) else None
        if isinstance(note, str) and note:
            move["note"] = note
            found = True
    return found


def _plain(moves_in: list[Any], players: int) -> tuple[list[dict], list[dict]]:
    """No engine: the last play stays on the table and the next mover is the next record.

    Records that are not moves at all are skipped, so even a damaged replay renders."""
    valid = [
        m for m in moves_in
        if isinstance(m, dict) and isinstance(m.get("seat"), int) and 0 <= m["seat"] < players
    ]
    moves: list[dict[str, Any]] = []
    states: list[dict[str, Any]] = [
        {"table": None, "to_move": valid[0]["seat"] if valid else None, "locked": [], "finished": [], "chain": []}
    ]
    table = None
    for i, m in enumerate(valid):
        raw = m.get("cards")
        cards = [str(c) for c in raw] if isinstance(raw, list) else []
        entry = {"seat": m["seat"], "pass": bool(m.get("pass")), "cards": cards or None, "kind": _kind_of(cards) if cards else None}
        if cards:
            table = {"seat": m["seat"], "cards": cards, "kind": entry["kind"]}
        moves.append(entry)
        nxt = valid[i + 1]["seat"] if i + 1 < len(valid) else None
        states.append({"table": table, "to_move": nxt, "locked": [], "finished": [], "chain": []})
    return moves, states


def _simulate(replay: dict[str, Any], players: int) -> tuple[list[dict], list[dict], str | None]:
    """Step the engine through the moves, recording what a spectator sees after each; and
    the kind of instant win the deal held, if any."""
    preset = replay.get("preset", "south")
    options = Options.from_dict(replay.get("options") or {}, base=PRESETS[preset])
    game = Game(replay["hands"], preset=preset, starting=bool(replay.get("starting", True)),
                leader=replay.get("leader"), options=options, seed=replay.get("seed"))
    moves: list[dict[str, Any]] = []
    chain: list[dict[str, Any]] = []
    states = [_state(game, chain)]
    for i, m in enumerate(replay.get("moves") or []):
        seat = int(m["seat"])
        offer = game.offer
        table_before = game.table
        table_seat_before = game.table_seat
        chops_before = len(game.chops)
        finished_before = len(game.finishing_order)
        if m.get("pass"):
            game.pass_turn(seat=seat)
            entry: dict[str, Any] = {"seat": seat, "pass": True, "cards": None, "kind": None}
        elif "cards" in m:
            game.play(m["cards"], seat=seat)
            entry = {"seat": seat, "pass": False, "cards": [str(c) for c in m["cards"]]}
        else:
            raise ValueError(f"move {i} is neither a play nor a pass")
        if offer:
            entry["offer"] = offer
        if not entry["pass"]:
            played = game.table if game.table is not None and game.table_seat == seat else None
            entry["kind"] = played.kind if played is not None else _kind_of(entry["cards"])
            entry["lead"] = table_before is None and not offer
            chopped = len(game.chops) > chops_before
            entry["chop"] = chopped
            if chopped and table_before is not None:
                if not chain:
                    chain = [{"seat": table_seat_before, "cards": [str(c) for c in table_before.cards]}]
                chain = [*chain, {"seat": seat, "cards": entry["cards"]}]
            elif table_before is None:
                chain = []
        order = game.finishing_order
        if len(order) > finished_before and seat in order:
            entry["out"] = order.index(seat) + 1
        if game.table is None:
            chain = []
        moves.append(entry)
        states.append(_state(game, chain))
    return moves, states, game.instant_win_kind


def _state(game: GameState, chain: list[dict[str, Any]]) -> dict[str, Any]:
    table = game.table
    return {
        "table": None if table is None else {"seat": game.table_seat, "cards": [str(c) for c in table.cards], "kind": table.kind},
        "to_move": game.to_move,
        "locked": list(game.locked_out),
        "finished": list(game.finishing_order),
        "offer": game.offer,
        "frozen": list(game.frozen),
        "chain": chain,
    }
