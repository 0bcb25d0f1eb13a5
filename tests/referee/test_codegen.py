"""The committed Python code of the protocol matches proto/ (`make proto` regenerates it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from referee_service import protogen


def test_committed_generated_code_is_up_to_date() -> None:
    assert protogen.stale_files() == [], "run `make proto` and commit bots_sdk/protocol"


def test_a_changed_proto_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proto_copy = tmp_path / "proto"
    shutil.copytree(protogen.PROTO_ROOT, proto_copy)
    game = proto_copy / "tienlen" / "v1" / "game.proto"
    game.write_text(game.read_text().replace("message Cards {", "message Cards {\n  uint32 x = 9;"))
    monkeypatch.setattr(protogen, "PROTO_ROOT", proto_copy)
    assert "tienlen/v1/game_pb2.py" in protogen.stale_files()


def test_generated_imports_point_into_the_sdk_package() -> None:
    from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2, organizer_pb2

    assert bot_gateway_pb2.DESCRIPTOR.package == "tienlen.v1"
    assert organizer_pb2.DESCRIPTOR.services_by_name["Organizer"]
    for path in (Path(protogen.OUTPUT) / "tienlen" / "v1").glob("*.py"):
        text = path.read_text()
        assert "from tienlen.v1" not in text and "import tienlen.v1" not in text, path
