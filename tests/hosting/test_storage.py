"""A hosted bot's own storage in the real sandbox (tournaments.hosting.storage): what one
session leaves is there for the next, the cap is the kernel's (a write past it fails with
ENOSPC), only files and folders are kept, and no other bot can read it — not at its own
/storage, not by the host path of the other bot's, not as its slot uid on the host."""

from __future__ import annotations

import json
import secrets
import subprocess
import time

import pytest

from tournaments.hosting import BotSpec, Host
from tournaments.hosting import storage as storage_mod
from tournaments.hosting.process import SessionEnd

from .conftest import OTHER_TOKEN, TOKEN

pytestmark = pytest.mark.timeout(180)

STORE_BOT = '''
import json, os, sys, time

root = os.environ.get("TIENLEN_STORAGE", "")
mode = os.environ["STORE_MODE"]
found = {"root": root, "cap": os.environ.get("TIENLEN_STORAGE_BYTES")}


def attempt(fn):
    try:
        return fn()
    except OSError as exc:
        return f"{type(exc).__name__}: errno {exc.errno}"


if mode in ("write", "write_and_sleep"):
    with open(os.path.join(root, "book.json"), "w") as f:
        f.write(os.environ["STORE_TEXT"])
    os.makedirs(os.path.join(root, "sub"), exist_ok=True)
    with open(os.path.join(root, "sub", "n.txt"), "w") as f:
        f.write("1")
    os.symlink("/etc/ld.so.cache", os.path.join(root, "link"))
    os.mkfifo(os.path.join(root, "fifo"))
elif mode == "read":
    found["listing"] = sorted(os.listdir(root))
    found["book"] = attempt(lambda: open(os.path.join(root, "book.json")).read())
    found["sub"] = attempt(lambda: open(os.path.join(root, "sub", "n.txt")).read())
elif mode == "fill":
    written = 0
    try:
        with open(os.path.join(root, "big"), "wb") as f:
            while True:
                f.write(b"x" * (1 << 20))
                f.flush()
                os.fsync(f.fileno())
                written += 1
    except OSError as exc:
        found["error"] = exc.errno
    found["written_mib"] = written
elif mode == "peek":
    found["listing"] = sorted(os.listdir(root))
    found["peeks"] = {p: attempt(lambda p=p: open(p).read()) for p in json.loads(os.environ["PEEK_PATHS"])}
print("STORE " + json.dumps(found), flush=True)
if mode == "write_and_sleep":
    time.sleep(120)
sys.exit(0)
'''


def run(host: Host, code, mode: str, *, data: bytes = b"", mib: int = 1, token: str = TOKEN,
        env: dict | None = None) -> SessionEnd:
    bot = host.start(BotSpec(runtime="python3.11", code_dir=code(STORE_BOT), token=token, storage=data,
                             storage_mib=mib, env={"STORE_MODE": mode, **(env or {})}, label=f"store-{mode}"))
    end = bot.wait(90) or bot.stop(0)
    return end


def reported(end: SessionEnd) -> dict:
    lines = [line for line in end.log.splitlines() if line.startswith("STORE ")]
    assert lines, f"the bot reported nothing ({end.reason}: {end.detail}):\n{end.log[-3000:]}"
    return json.loads(lines[-1][len("STORE "):])


def test_what_a_session_leaves_is_there_for_the_next_one_files_and_folders_only(host, code):
    text = f"opening book {secrets.token_hex(8)}"
    first = run(host, code, "write", env={"STORE_TEXT": text})
    assert reported(first) == {"root": "/storage", "cap": str(1024 * 1024)}
    assert first.storage is not None and first.storage.files == 3  # book.json, sub, sub/n.txt
    assert first.storage.size == len(text) + 1
    assert "storage: 2 entries that are not files or folders left out" in first.log  # the link, the fifo
    second = run(host, code, "read", data=first.storage.data)
    found = reported(second)
    assert found["listing"] == ["book.json", "sub"] and found["book"] == text and found["sub"] == "1"
    # the host keeps no copy: each session's tmpfs is gone with it
    assert not list((host.config.state_dir / "s").glob("*/storage"))


def test_the_cap_is_the_kernels_a_write_past_it_fails_with_enospc(host, code):
    end = run(host, code, "fill", mib=2)
    found = reported(end)
    assert found["error"] == 28 and found["written_mib"] <= 2  # ENOSPC at the cap
    assert end.storage is not None and end.storage.size <= 2 * 1024 * 1024


def test_a_stored_tar_over_the_cap_or_with_hostile_names_is_cut_when_unpacked(tmp_path):
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, size in (("../escape", 10), ("/abs", 10), ("ok", 10), ("big", 5000)):
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BytesIO(b"y" * size))
    target = tmp_path / "s"
    target.mkdir()
    storage_mod.unpack(buffer.getvalue(), target, cap_bytes=1000, uid=None, gid=None)
    assert sorted(p.name for p in target.iterdir()) == ["ok"]
    assert not (tmp_path / "escape").exists()


def test_without_the_tmpfs_a_storage_over_its_cap_is_not_kept_and_links_are_not_followed(tmp_path):
    source = tmp_path / "storage"
    source.mkdir()
    (source / "a.bin").write_bytes(b"z" * 600)
    (source / "secret-link").symlink_to("/etc/hostname")
    kept = storage_mod.pack(source, cap_bytes=1000)
    assert kept.files == 1 and kept.size == 600 and "1 entries that are not files or folders" in kept.note
    (source / "b.bin").write_bytes(b"z" * 600)
    over = storage_mod.pack(source, cap_bytes=1000)
    assert over.data == b"" and over.note == ("storage not kept: over its cap of 1000 bytes "
                                              "(the previous contents stay)")


def test_no_other_bot_can_read_a_bots_storage(host, code):
    secret = f"SECRET-OF-B-{secrets.token_hex(8)}"
    b = host.start(BotSpec(runtime="python3.11", code_dir=code(STORE_BOT), token=OTHER_TOKEN, storage=b"",
                           env={"STORE_MODE": "write_and_sleep", "STORE_TEXT": secret}, label="store-b"))
    try:
        assert b.wait_started(30)
        deadline = time.monotonic() + 30
        while "STORE " not in b.log.text() and time.monotonic() < deadline:
            time.sleep(0.1)
        b_book = b.dir / "storage" / "book.json"
        assert b_book.read_text() == secret  # there, on the host, while B runs
        a = run(host, code, "peek", env={"PEEK_PATHS": json.dumps([str(b_book), "/storage/book.json"])})
        found = reported(a)
        assert found["listing"] == []  # A's own storage: empty, nothing of B's
        assert all(v.startswith("FileNotFoundError") for v in found["peeks"].values()), found["peeks"]
        assert secret not in a.log
        # on the host, another slot's uid cannot read it either (mode 0700, B's slot uid)
        uid = host.config.uid_base + 5
        peek = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "cat", str(b_book)],
                              capture_output=True, text=True)
        assert peek.returncode != 0 and "Permission denied" in peek.stderr
    finally:
        end = b.stop(0)
    assert end.storage is not None and end.storage.files == 3
