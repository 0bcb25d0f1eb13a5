"""docs/rules.md is what bot authors read: its option table must match PRESETS and its
deal test vector must match the engine, or the document silently lies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bots_sdk.cards import format_cards
from bots_sdk.rules import PRESETS, Game, Options, deal

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
PRESET_COLUMNS = ["south", "south_extended", "hue", "danang", "north"]


def _option_rows() -> dict[str, list[str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("### Option reference", 1)[1].split("\n### ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        m = re.match(r"\| `([a-z_0-9]+)` \|", line)
        if m:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[m.group(1)] = cells[2:]
    return rows


def _parse(cell: str, like):
    if isinstance(like, bool):
        return {"true": True, "false": False}[cell]
    if isinstance(like, int):
        return int(cell)
    if isinstance(like, list):
        return [] if cell == "—" else [v.strip() for v in cell.split(",")]
    return cell


def test_every_option_is_documented_once() -> None:
    assert set(_option_rows()) == set(Options().to_dict())


def test_the_presets_are_the_documented_five() -> None:
    assert sorted(PRESETS) == sorted(PRESET_COLUMNS)


@pytest.mark.parametrize("column", range(len(PRESET_COLUMNS)))
def test_documented_values_match_each_preset(column: int) -> None:
    preset = PRESET_COLUMNS[column]
    values = PRESETS[preset].to_dict()
    for name, cells in _option_rows().items():
        assert len(cells) == len(PRESET_COLUMNS), name
        assert _parse(cells[column], values[name]) == values[name], (preset, name)


def test_documented_deal_vector() -> None:
    text = DOC.read_text(encoding="utf-8")
    hands = re.findall(r"\| ([0-3]) \| `([0-9JQKA SCDH]+)` \|", text)
    assert [int(s) for s, _ in hands] == [0, 1, 2, 3]
    assert [format_cards(h) for h in deal("example", 4)] == [h for _, h in hands]


def test_unknown_option_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match="no_such_rule"):
        Options.from_dict({"no_such_rule": True})
    with pytest.raises(ValueError, match="no_such_rule"):
        Game.from_seed("x", 4, options={"no_such_rule": 1})


def test_unknown_preset_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match="mars"):
        Game.from_seed("x", 4, preset="mars")


def test_options_round_trip_and_overrides_are_recorded_in_the_replay() -> None:
    for name, opts in PRESETS.items():
        assert Options.from_dict(opts.to_dict()) == opts, name
    g = Game.from_seed("x", 4, options={"count_stuck_on_instant_win": True})
    assert g.replay()["options"]["count_stuck_on_instant_win"] is True
    assert g.replay()["preset"] == "south"
