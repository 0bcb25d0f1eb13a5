"""Text rendering of a replay for `tienlen-bot replay`: the game move by move.

The replay is re-simulated with the engine rather than trusted, so the printout shows the
rounds as the referee saw them (who led, who was offered what) and flags a replay whose
stored result does not match its moves.
"""

from __future__ import annotations

from typing import Any

from bots_sdk.cards import format_cards, parse_cards
from bots_sdk.rules.notes import NOTE_KEY
from bots_sdk.rules.replay import ReplayError, replay_read

__all__ = ["ReplayError", "format_replay"]


def _seat_label(seat: int, names: list[str] | None) -> str:
    if names and seat < len(names):
        return f"seat {seat} ({names[seat]})"
    return f"seat {seat}"


def _note_lines(move: dict[str, Any]) -> list[str]:
    """The move's note (the bot's own words, docs/replay-format.md) as one line, with every
    character that is not printable (controls, line breaks, bidi overrides) written as an
    escape, so a note cannot drive the terminal or fake a line of the printout."""
    note = move.get(NOTE_KEY)
    if not isinstance(note, str) or not note:
        return []
    shown = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in note)
    return [f"         note: {shown}"]


def format_replay(
    doc: Any, *, seat_names: list[str] | None = None, symbols: bool = False
) -> str:
    from bots_sdk.rules import Game, IllegalMove, classify

    doc = replay_read(doc)  # ReplayError says what is wrong
    hands = [parse_cards(h) for h in doc["hands"]]

    def fmt(cards: Any) -> str:
        return format_cards(parse_cards(cards), symbols=symbols)

    preset = doc["preset"]
    players = len(hands)
    starting = doc["starting"]
    leader = doc.get("leader")
    try:
        game = Game(
            hands, preset=preset, starting=starting, leader=leader, options=doc.get("options") or None
        )
    except (ValueError, TypeError) as exc:
        raise ReplayError(f"cannot set the game up: {exc}") from None

    width = max(len(_seat_label(s, seat_names)) for s in range(players))
    out = [
        f"preset {preset}, {players} players, "
        + ("starting game" if starting else f"seat {leader} leads")
        + (f", seed {doc['seed']!r}" if doc.get("seed") else ""),
        "",
    ]
    for s, hand in enumerate(hands):
        out.append(f"{_seat_label(s, seat_names):<{width}}  {format_cards(hand, symbols=symbols)}")
    out.append("")

    rnd = 0
    for i, move in enumerate(doc["moves"], 1):
        if game.is_over:
            out.append(f"!! move {i} comes after the end of the game")
            break
        seat = move.get("seat")
        if seat != game.to_move:
            out.append(f"!! move {i} is by seat {seat} but seat {game.to_move} was to move")
            break
        view = game.view(seat)
        label = f"{_seat_label(seat, seat_names):<{width}}"
        offer = view.offer
        if view.table is None and offer is None:
            rnd += 1
            out.append(f"round {rnd}")
        try:
            if move.get("pass"):
                game.pass_turn()
                verb = f"declines {offer}" if offer else "passes"
                out.append(f"  {i:>3}. {label}  {verb}")
            else:
                cards = parse_cards(move.get("cards") or [])
                game.play(cards)
                combo = classify(cards, preset=preset)
                kind = combo.kind.replace("_", " ") if combo else "?"
                verb = offer.replace("_", " ") if offer else (
                    "leads" if view.table is None else "plays"
                )
                left = game.view(seat).card_counts[seat]
                tail = "  -- out!" if left == 0 else f"  ({left} left)"
                out.append(f"  {i:>3}. {label}  {verb:<6} {fmt(cards):<24} {kind}{tail}")
        except IllegalMove as exc:
            out.append(f"!! move {i} is illegal: {exc}")
            break
        except ValueError as exc:
            out.append(f"!! move {i} cannot be read: {exc}")
            break
        out.extend(_note_lines(move))

    out.append("")
    if game.is_over:
        order = list(game.finishing_order)
        pts = list(game.points)
        if game.instant_winner is not None:
            out.append(f"instant win by {_seat_label(game.instant_winner, seat_names)}")
        out.append("finishing order: " + ", ".join(_seat_label(s, seat_names) for s in order))
        out.append("points: " + "  ".join(f"{_seat_label(s, seat_names)} {p:+d}" for s, p in enumerate(pts)))
        for p in getattr(game, "payments", []) or []:
            out.append(
                f"  {_seat_label(p['from'], seat_names)} pays {_seat_label(p['to'], seat_names)} "
                f"{p['points']} ({p['reason']})"
            )
        stored = (doc.get("result") or {}).get("points")
        if stored is not None and list(stored) != pts:
            out.append(f"!! the replay's stored points {stored} differ from the moves' result {pts}")
    else:
        out.append("the game is not over (the replay stops early)")
    return "\n".join(out)

