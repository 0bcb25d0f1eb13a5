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

log = logging.getLogger(__name__)

BOMB_KINDS = ("three_pair_sequence", "four_of_a_kind", "pair_sequence", "bomb")
FULL_DECK = [r + s for r in ["3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A", "2"] for s in "SCDH"]


def _is_two(cards: list[str]) -> bool:
    return bool(cards) and all(c[:-1] == "2" for c in cards) and len(cards) <= 2


def _is_bomb(kind: str | None, cards: list[str]) -> bool:
    if not kind:
        return False
    if kind in ("four_of_a_kind", "quads"):
        return True
    return "pair_seq" in kind and len(cards) >= 6


def _kind_of(cards: list[str]) -> str | None:
    try:
        from bots_sdk.rules import classify

        combo = classify(cards)
    except Exception:
        return None
    if combo is None:
        return None
    kind = getattr(combo, "kind", combo)
    return str(getattr(kind, "value", kind)).lower()


def replay_frames(replay: dict[str, Any], *, names: list[str]) -> dict[str, Any]:
    players = int(replay.get("players") or len(replay.get("hands") or []))
    hands = [list(map(str, h)) for h in (replay.get("hands") or [])]
    moves_in = replay.get("moves") or []
    result = replay.get("result") or {}
    dealt = {c for h in hands for c in h}
    frames: dict[str, Any] = {
        "players": players,
        "names": names[:players],
        "preset": replay.get("preset"),
        "seed": replay.get("seed"),
        "starting": replay.get("starting"),
        "hands": hands,
        "undealt": [c for c in FULL_DECK if c not in dealt] if dealt else [],
        "result": result,
        "payments": [_payment(p, names) for p in result.get("payments") or []],
        "warning": None,
    }
    try:
        moves, states = _simulate(replay, players)
    except Exception as exc:
        log.warning("replay could not be re-simulated: %s", exc)
        frames["warning"] = f"This replay could not be re-simulated by the current engine ({exc}); the table view is simplified."
        moves, states = _plain(moves_in, players)
    frames["moves"] = moves
    frames["states"] = states
    if result.get("instant_winner") is not None:
        w = result["instant_winner"]
        frames["instant_win_text"] = f"Instant win (tới trắng) for {names[w] if w < len(names) else w}"
    return frames


REASONS = {
    "place": "finishing places",
    "places": "finishing places",
    "finish": "finishing places",
    "frozen": "frozen (cóng)",
    "stuck": "stuck with 2s or bombs (thối)",
    "chop": "chop chain (chặt)",
    "instant_win": "instant win (tới trắng)",
    "pay_for_table": "paying for the table (đền bài)",
}


def _payment(p: dict[str, Any], names: list[str]) -> dict[str, Any]:
    def name(i: Any) -> str:
        return names[i] if isinstance(i, int) and 0 <= i < len(names) else str(i)

    reason = str(p.get("reason", ""))
    key = next((k for k in REASONS if reason.startswith(k)), None)
    return {**p, "from_name": name(p.get("from")), "to_name": name(p.get("to")), "reason_text": REASONS[key] if key else reason.replace("_", " ")}


def _plain(moves_in: list[dict[str, Any]], players: int) -> tuple[list[dict], list[dict]]:
    """No engine: the last play stays on the table and the next mover is the next record."""
    moves, states = [], [{"table": None, "to_move": moves_in[0]["seat"] if moves_in else None, "locked": [], "finished": [], "chain": []}]
    table = None
    for i, m in enumerate(moves_in):
        cards = [str(c) for c in m.get("cards") or []]
        entry = {"seat": m["seat"], "pass": bool(m.get("pass")), "cards": cards or None, "kind": _kind_of(cards) if cards else None}
        if cards:
            table = {"seat": m["seat"], "cards": cards, "kind": entry["kind"]}
        moves.append(entry)
        nxt = moves_in[i + 1]["seat"] if i + 1 < len(moves_in) else None
        states.append({"table": table, "to_move": nxt, "locked": [], "finished": [], "chain": []})
    return moves, states


def _simulate(replay: dict[str, Any], players: int) -> tuple[list[dict], list[dict]]:
    from bots_sdk import rules

    game = _new_game(rules, replay)
    moves: list[dict[str, Any]] = []
    states = [_state(game, players, chain=[])]
    chain: list[dict[str, Any]] = []
    prev_table = None
    finished_before: list[int] = []
    for m in replay.get("moves") or []:
        seat = int(m["seat"])
        offer = getattr(game, "offer", None)
        view_before = game.view(seat)
        table_before = view_before.table
        if m.get("pass"):
            game.pass_turn()
            entry = {"seat": seat, "pass": True, "cards": None, "kind": None, "offer": offer}
        else:
            cards = [str(c) for c in m["cards"]]
            game.play(cards)
            entry = {"seat": seat, "pass": False, "cards": cards, "offer": offer}
        st = _state(game, players, chain=chain)
        if not entry["pass"]:
            table = st["table"]
            kind = (table or {}).get("kind") or _kind_of(entry["cards"])
            entry["kind"] = kind
            entry["lead"] = table_before is None
            chopped = table_before is not None and (
                (_is_two(list(map(str, table_before["cards"]))) or _is_bomb(str(table_before.get("kind")), list(table_before["cards"])))
                and _is_bomb(kind, entry["cards"])
            )
            if chopped and replay.get("preset") in ("hue", "danang") and str(table_before.get("kind")) == kind:
                chopped = False  # same-type higher bombs are normal beats in these presets
            entry["chop"] = bool(chopped)
            if table_before is None:
                chain = []
            if chopped:
                if not chain:
                    chain = [{"seat": int(table_before["seat"]), "cards": list(map(str, table_before["cards"]))}]
                chain = [*chain, {"seat": seat, "cards": entry["cards"]}]
        if st["table"] is None:
            chain = []
        st["chain"] = chain
        newly_out = [s for s in st["finished"] if s not in finished_before]
        if seat in newly_out:
            entry["out"] = st["finished"].index(seat) + 1
        finished_before = list(st["finished"])
        prev_table = st["table"]
        moves.append(entry)
        states.append(st)
    del prev_table
    return moves, states


def _new_game(rules: Any, replay: dict[str, Any]) -> Any:
    from bots_sdk.cards import parse_cards

    hands = [parse_cards(h) for h in replay["hands"]]
    return rules.Game(
        players=int(replay["players"]),
        hands=hands,
        preset=replay.get("preset", "south"),
        options=replay.get("options"),
        starting=bool(replay.get("starting", True)),
        leader=replay.get("leader"),
    )


def _state(game: Any, players: int, *, chain: list[dict[str, Any]]) -> dict[str, Any]:
    to_move = getattr(game, "to_move", None)
    view = game.view(to_move if isinstance(to_move, int) else 0)
    table = view.table
    if table is not None:
        table = {"seat": int(table["seat"]), "cards": [str(c) for c in table["cards"]], "kind": str(getattr(table.get("kind"), "value", table.get("kind")))}
    return {
        "table": table,
        "to_move": view.to_move,
        "locked": list(view.locked_out),
        "finished": list(view.finished),
        "offer": view.offer,
        "chain": chain,
    }
