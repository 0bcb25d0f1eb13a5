"""docs/protocol.md's reference tables must say what the code does: the one table of move
error names (doc, wire, engine) and the keys and JSON types of options_json."""

from __future__ import annotations

import re
from pathlib import Path

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.rules import PRESETS
from referee_service import wire

DOC = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()


def table_after(heading: str) -> list[list[str]]:
    """The rows (cells) of the first table after a heading line."""
    lines = DOC[DOC.index(heading):].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| "))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def test_the_error_table_maps_every_wire_code_to_its_doc_and_engine_names() -> None:
    rows = table_after("### Move errors: one table")
    enum = gw.MoveErrorCode
    named = {}
    for short, wire_cell, engine, _when, _example in rows:
        name, number = re.fullmatch(r"`(MOVE_ERROR_CODE_\w+)` \((\d+)\)", wire_cell).groups()
        assert enum.Value(name) == int(number)
        assert short == f"`{name.removeprefix('MOVE_ERROR_CODE_')}`"
        named[name] = engine
    all_names = gw.DESCRIPTOR.enum_types_by_name["MoveErrorCode"].values_by_name
    assert set(named) == {n for n in all_names if n != "MOVE_ERROR_CODE_UNSPECIFIED"}
    for code, value in wire.MOVE_ERROR_CODES.items():
        assert named[enum.Name(value)] == f"`{code}`", code
    for name, engine in named.items():
        if engine.startswith("`") and engine.endswith("`"):
            assert wire.MOVE_ERROR_CODES[engine.strip("`")] == enum.Value(name)


def json_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, str):
        return "string"
    assert isinstance(value, list) and all(isinstance(v, str) for v in value)
    return "array of strings"


def test_the_options_table_lists_every_key_with_its_json_type() -> None:
    rows = table_after("| key | JSON type | meaning |")
    documented = {row[0].strip("`"): row[1] for row in rows}
    for preset in PRESETS.values():
        options = preset.to_dict()
        assert list(documented) == list(options)
        for key, value in options.items():
            assert documented[key].startswith(json_type(value)), (key, documented[key])


def test_no_doc_says_the_weakest_dealt_card_always_leads() -> None:
    protos = Path(__file__).resolve().parents[2] / "proto" / "tienlen" / "v1"
    text = "".join(p.read_text() for p in protos.glob("*.proto"))
    assert "the weakest dealt card leads" not in text + DOC
