"""The no-server broker (tournaments.filesystem_broker): a consumer polling the folder
never takes a message that is not yet written. kombu's own transport created the file and
then wrote it, and the demo's worker died on an empty message (`JSONDecodeError`)."""

from __future__ import annotations

import pytest
from kombu import Connection
from kombu.transport import filesystem

from tournaments import filesystem_broker


def channel(tmp_path, transport):
    conn = Connection("filesystem://", transport=transport, transport_options={
        "data_folder_in": str(tmp_path), "data_folder_out": str(tmp_path),
        "processed_folder": str(tmp_path / "processed"), "store_processed": False,
        "control_folder": str(tmp_path / "control"),
    })
    return conn, conn.default_channel


def consumer_polls_during_the_write(monkeypatch, module, chan) -> list[object]:
    """Have a consumer poll the folder while the message is being serialised and written."""
    seen: list[object] = []
    real = module.dumps

    def dumps_and_poll(payload):
        try:
            seen.append(chan._get("q"))
        except Exception as exc:  # Empty (nothing to take) or what a bad message raised
            seen.append(type(exc).__name__)
        return real(payload)

    monkeypatch.setattr(module, "dumps", dumps_and_poll)
    return seen


def test_a_message_is_never_seen_half_written(tmp_path, monkeypatch) -> None:
    conn, chan = channel(tmp_path, filesystem_broker.Transport)
    try:
        seen = consumer_polls_during_the_write(monkeypatch, filesystem_broker, chan)
        chan._put("q", {"body": "x" * 10_000})
        assert seen == ["Empty"]  # mid-write, the consumer found nothing to take
        assert chan._get("q") == {"body": "x" * 10_000}  # then the whole message
        assert not [p for p in tmp_path.iterdir() if p.is_file()]  # no partial file left
    finally:
        conn.release()


def test_kombus_own_transport_hands_out_an_empty_message(tmp_path, monkeypatch) -> None:
    """The failure the module exists for, so this test file fails if kombu ever changes."""
    conn, chan = channel(tmp_path, filesystem.Transport)
    try:
        seen = consumer_polls_during_the_write(monkeypatch, filesystem, chan)
        chan._put("q", {"body": "x"})
        assert seen == ["JSONDecodeError"]
    finally:
        conn.release()


def test_the_settings_select_it_for_the_no_server_broker() -> None:
    from django.conf import settings

    if not str(settings.CELERY_BROKER_URL).startswith("filesystem://"):
        pytest.skip("a real broker is configured (CELERY_BROKER_URL)")
    assert settings.CELERY_BROKER_TRANSPORT == "tournaments.filesystem_broker:Transport"
    from tienlen_site.celery import app

    with app.connection_for_write() as conn:
        assert isinstance(conn.default_channel, filesystem_broker.Channel)
