"""TLS: the referee can serve encrypted connections only, for bots across the internet."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from referee_service.organizer_client import OrganizerClient, RefereeError
from referee_service.server import referee_in_thread

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    directory = tmp_path_factory.mktemp("tls")
    key, cert = directory / "key.pem", directory / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True)
    return Path(cert).read_bytes(), Path(key).read_bytes()


def test_tls_referee_serves_tls_clients_only(certificate: tuple[bytes, bytes]) -> None:
    cert, key = certificate
    with referee_in_thread(organizer_token="tls-org", tls_cert=cert, tls_key=key) as referee:
        with OrganizerClient(referee.target, "tls-org", root_certificates=cert) as client:
            out = list(client.play_table(table_id="tls", games=1,
                                         seats=["house:random", "house:greedy"]))
            assert out[-1].status == org.TABLE_STATUS_COMPLETED
        with OrganizerClient(referee.target, "tls-org", timeout=3) as plain, \
                pytest.raises(RefereeError) as info:
            plain.list_bots()
        assert info.value.code in {"UNAVAILABLE", "DEADLINE_EXCEEDED"}
