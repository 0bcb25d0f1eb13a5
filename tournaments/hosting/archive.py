"""A submitted bot's archive: the checks every upload passes before it is stored, and the
one way it is unpacked for a runner.

An archive is a zip (what `tienlen-bot submit` makes of a file or a folder, or what an
author uploads on the bot's page). It is the input an attacker controls, so it is read
with every limit checked on the zip's own directory before a byte is inflated, and
inflated with the limit checked again as it goes (a zip's declared sizes can lie):

- at most `MAX_ARCHIVE_BYTES` as uploaded, `MAX_FILES` files, `MAX_UNPACKED_BYTES`
  unpacked in all, and within that at most `MAX_DATA_BYTES` of data files;
- code files are `.py` (the Python runtime) or `.js`/`.mjs`/`.cjs` (Node), data files
  one of `DATA_SUFFIXES`; nothing else (no binaries, no native extensions: the runtime
  is fixed and nothing is installed at run time);
- names are relative, `/`-separated, with no `..`, no empty or dot-only part, no
  backslash, no control character, at most 200 bytes; no two the same (case-folded);
- only regular files and folders: a symlink, a device or anything else is refused;
- the entry file (`bot.py` or `bot.js`, at the top) is present.

No Django here: a runner unpacks with it bare.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MAX_ARCHIVE_BYTES = 1024 * 1024
MAX_UNPACKED_BYTES = 8 * 1024 * 1024
MAX_DATA_BYTES = 4 * 1024 * 1024
MAX_FILES = 200
MAX_NAME_BYTES = 200

CODE_SUFFIXES = {"python3.11": frozenset({".py"}), "node20": frozenset({".js", ".mjs", ".cjs"})}
ENTRY = {"python3.11": "bot.py", "node20": "bot.js"}
DATA_SUFFIXES = frozenset({".json", ".txt", ".csv", ".tsv", ".md", ".bin", ".dat", ".npy", ".npz", ".pkl"})


class ArchiveError(ValueError):
    """The archive is refused; the message says why, for the author."""


@dataclass(frozen=True)
class Manifest:
    """What a checked archive holds: its files (name -> size) and a content hash that
    depends only on the names and contents (not on the zip's timestamps or order)."""

    files: dict[str, int]
    sha256: str
    unpacked_bytes: int
    data_bytes: int
    entry: str


def _name_problem(name: str) -> str | None:
    if not name:
        return "an empty name"
    if "\\" in name:
        return "a backslash (use '/' between folders)"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "a control character"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "an absolute path"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return f"more than {MAX_NAME_BYTES} bytes"
    parts = name.rstrip("/").split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "'..', '.' or an empty part"
    return None


def _kind(info: zipfile.ZipInfo) -> str:
    """'dir', 'file', or what else it is (a zip made on unix keeps the file's mode)."""
    mode = info.external_attr >> 16
    if mode and stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "symlink" if stat.S_ISLNK(mode) else "special file"
    return "dir" if info.is_dir() else "file"


def check(archive: bytes, runtime: str) -> Manifest:
    """The manifest of a valid archive for `runtime`, else ArchiveError saying why."""
    if runtime not in CODE_SUFFIXES:
        raise ArchiveError(f"unknown runtime {runtime!r}: use one of {', '.join(sorted(CODE_SUFFIXES))}")
    if len(archive) > MAX_ARCHIVE_BYTES:
        raise ArchiveError(f"the archive is {len(archive)} bytes: at most {MAX_ARCHIVE_BYTES} bytes are accepted")
    try:
        zf = zipfile.ZipFile(io.BytesIO(archive))
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ArchiveError(f"not a zip archive ({exc})") from exc
    allowed = CODE_SUFFIXES[runtime] | DATA_SUFFIXES
    files: dict[str, int] = {}
    folded: set[str] = set()
    declared = data = 0
    for info in infos:
        name = info.filename
        problem = _name_problem(name)
        if problem:
            raise ArchiveError(f"refused {name!r}: its name has {problem}")
        kind = _kind(info)
        if kind == "dir":
            continue
        if kind != "file":
            raise ArchiveError(f"refused {name!r}: a {kind} (only files and folders are accepted)")
        if info.flag_bits & 0x1:
            raise ArchiveError(f"refused {name!r}: encrypted")
        suffix = PurePosixPath(name).suffix.lower()
        if suffix not in allowed:
            raise ArchiveError(
                f"refused {name!r}: {suffix or 'no suffix'} is not accepted for {runtime} "
                f"(code: {', '.join(sorted(CODE_SUFFIXES[runtime]))}; data: {', '.join(sorted(DATA_SUFFIXES))})")
        if name.casefold() in folded:
            raise ArchiveError(f"refused {name!r}: a second file of that name")
        folded.add(name.casefold())
        files[name] = info.file_size
        declared += info.file_size
        if suffix in DATA_SUFFIXES:
            data += info.file_size
        if len(files) > MAX_FILES:
            raise ArchiveError(f"more than {MAX_FILES} files")
        if declared > MAX_UNPACKED_BYTES:
            raise ArchiveError(f"more than {MAX_UNPACKED_BYTES} bytes unpacked")
        if data > MAX_DATA_BYTES:
            raise ArchiveError(f"more than {MAX_DATA_BYTES} bytes of data files")
    entry = ENTRY[runtime]
    if entry not in files:
        raise ArchiveError(f"no {entry} at the top of the archive: a {runtime} bot starts from {entry}")
    digest = hashlib.sha256()
    total = 0
    for name in sorted(files):
        content = _read(zf, name, MAX_UNPACKED_BYTES - total)
        total += len(content)
        digest.update(name.encode() + b"\0" + str(len(content)).encode() + b"\0" + content)
    return Manifest(files=files, sha256=digest.hexdigest(), unpacked_bytes=total, data_bytes=data, entry=entry)


def _read(zf: zipfile.ZipFile, name: str, budget: int) -> bytes:
    """A member's content, never more than `budget` bytes inflated (a lying header)."""
    try:
        with zf.open(name) as member:
            content = member.read(budget + 1)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError) as exc:
        raise ArchiveError(f"refused {name!r}: cannot be read ({exc})") from exc
    if len(content) > budget:
        raise ArchiveError(f"more than {MAX_UNPACKED_BYTES} bytes unpacked")
    return content


def unpack(archive: bytes, runtime: str, into: Path) -> Manifest:
    """Check the archive and write its files under `into` (a new folder), content-addressed
    by the caller; folders are made from the (checked) names, files 0644, folders 0755."""
    manifest = check(archive, runtime)
    zf = zipfile.ZipFile(io.BytesIO(archive))
    into.mkdir(parents=True)
    for name in manifest.files:
        target = into.joinpath(*name.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(_read(zf, name, MAX_UNPACKED_BYTES))
        os.chmod(target, 0o644)
    for folder in [into, *[p for p in into.rglob("*") if p.is_dir()]]:
        os.chmod(folder, 0o755)
    return manifest
