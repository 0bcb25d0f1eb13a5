"""A hosted bot's own storage, kept between its sessions (docs/hosting.md).

Between sessions it is a gzipped tar held by the platform (the `BotStorage` row); for a
session the runner makes a **size-capped tmpfs** of its own on the host (`mount -t tmpfs
-o size=CAP`, owned by the session's slot uid, mode 0700), unpacks the tar into it and
binds it writable at `/storage` in that bot's sandbox only (`TIENLEN_STORAGE`). The cap
is the kernel's: a write past it fails with ENOSPC while the bot runs. When the session
ends the runner packs what is there (regular files and folders only: a symlink, a fifo or
a device the bot made is left out, and nothing is followed) and unmounts it. No other
bot's sandbox ever has it mounted, and its host directory is its slot uid's alone.

Without a sandbox (the development mode) the storage is a plain directory, checked when
the session ends: over the cap, it is not kept (the previous contents stay), and the
session's log says so.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

#: What a bot may keep: bytes of its files in all, and how many files and folders.
DEFAULT_STORAGE_MIB = 8
MAX_STORAGE_ENTRIES = 1000


class StorageError(Exception):
    """The storage could not be prepared (the platform's side) or a stored tar is unusable."""


@dataclass(frozen=True, slots=True)
class Packed:
    data: bytes  # a gzipped tar of the files
    size: int  # bytes of the files, unpacked
    files: int  # files and folders
    note: str  # one line for the session's log ("" when nothing was left out)


def empty() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz"):
        pass
    return buffer.getvalue()


def mount(target: Path, *, cap_bytes: int, uid: int | None, gid: int | None) -> bool:
    """A tmpfs of `cap_bytes` at `target` (an empty directory), owned by uid:gid, mode
    0700. True when mounted; False when this process cannot mount (not root: the
    development mode uses the plain directory). Raises StorageError if mount failed as root."""
    target.mkdir(mode=0o700, exist_ok=True)
    if os.geteuid() != 0:
        return False
    options = f"size={cap_bytes},nr_inodes={MAX_STORAGE_ENTRIES + 16},mode=0700,nosuid,nodev,noexec"
    if uid is not None and gid is not None:
        options += f",uid={uid},gid={gid}"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tienlen-storage", str(target)],
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise StorageError(f"mount of the bot's storage failed: {done.stderr.strip() or done.returncode}")
    return True


def unmount(target: Path) -> None:
    if os.path.ismount(target):
        subprocess.run(["umount", "--lazy", str(target)], capture_output=True, timeout=30)


def unpack(data: bytes, target: Path, *, cap_bytes: int, uid: int | None, gid: int | None) -> None:
    """The stored tar into `target`: regular files and folders with safe relative names
    only, at most `cap_bytes` and MAX_STORAGE_ENTRIES (a tar the platform wrote itself, but
    checked as if it were not), chowned to the slot."""
    if not data:
        return
    try:
        _unpack_members(data, target, cap_bytes)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise StorageError(f"the stored storage could not be unpacked: {exc}") from exc
    if uid is not None and gid is not None:
        os.chown(target, uid, gid)
        for dirpath, dirnames, filenames in os.walk(target):
            for name in [*dirnames, *filenames]:
                os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


def _unpack_members(data: bytes, target: Path, cap_bytes: int) -> None:
    total = entries = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar:
            parts = member.name.split("/")
            if member.name.startswith("/") or any(p in ("", ".", "..") for p in parts):
                continue
            entries += 1
            if entries > MAX_STORAGE_ENTRIES:
                break
            path = target.joinpath(*parts)
            if member.isdir():
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            elif member.isfile():
                total += member.size
                if total > cap_bytes:
                    break
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:
                    continue
                with source, open(path, "wb") as out:
                    out.write(source.read())
                os.chmod(path, 0o600)


def pack(source: Path, *, cap_bytes: int) -> Packed:
    """What the bot left in `source`, as a gzipped tar. Only regular files and folders are
    kept (never followed: read with O_NOFOLLOW). Over `cap_bytes` or MAX_STORAGE_ENTRIES
    (possible only without the tmpfs: the development mode) nothing is kept: `data` is
    empty and `note` says why."""
    buffer = io.BytesIO()
    total = entries = skipped = 0
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for dirpath, dirnames, filenames in os.walk(source, followlinks=False):
            dirnames.sort()
            for name in [*sorted(dirnames), *sorted(filenames)]:
                path = Path(dirpath) / name
                rel = path.relative_to(source).as_posix()
                st = path.lstat()
                entries += 1
                if entries > MAX_STORAGE_ENTRIES:
                    return Packed(b"", 0, 0, f"storage not kept: more than {MAX_STORAGE_ENTRIES} files and "
                                             "folders (the previous contents stay)")
                if stat.S_ISDIR(st.st_mode):
                    info = tarfile.TarInfo(rel)
                    info.type, info.mode = tarfile.DIRTYPE, 0o700
                    tar.addfile(info)
                elif stat.S_ISREG(st.st_mode):
                    total += st.st_size
                    if total > cap_bytes:
                        return Packed(b"", 0, 0, f"storage not kept: over its cap of {cap_bytes} bytes "
                                                 "(the previous contents stay)")
                    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
                    with os.fdopen(fd, "rb") as handle:
                        content = handle.read(cap_bytes + 1)
                    info = tarfile.TarInfo(rel)
                    info.size, info.mode = len(content), 0o600
                    tar.addfile(info, io.BytesIO(content))
                else:
                    skipped += 1
    files = entries - skipped
    note = f"storage: {skipped} entries that are not files or folders left out" if skipped else ""
    return Packed(buffer.getvalue(), total, files, note)
