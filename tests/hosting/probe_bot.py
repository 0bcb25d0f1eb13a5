"""A hostile hosted bot: what it tries is chosen by PROBE_MODE, and it tries it when its
file is imported (the first thing a hosted bot's code does), then reports what it got on
one line, `PROBE {json}`, and leaves. The tests copy this file as a bot's bot.py."""

import json
import os
import signal
import socket
import sys
import threading
import time

from bots_sdk import Bot

MODE = os.environ.get("PROBE_MODE", "")


def report(**found):
    print("PROBE " + json.dumps(found), flush=True)


def attempt(fn):
    try:
        result = fn()
        return "ok" if result is None else result
    except OSError as exc:
        return f"{type(exc).__name__}: errno {exc.errno}"
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def probe_network():
    found = {}
    for name, address in json.loads(os.environ["PROBE_TARGETS"]).items():
        host, port = address.rsplit(":", 1)
        found[name] = attempt(lambda h=host, p=port: socket.create_connection((h, int(p)), 2).close())
    found["dns"] = attempt(lambda: socket.getaddrinfo("example.com", 80) and "resolved")
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    found["udp_dns"] = attempt(lambda: udp.sendto(b"\0" * 12, ("8.8.8.8", 53)) and None)
    found["interfaces"] = sorted(name for _, name in socket.if_nameindex())
    found["resolv_conf"] = os.path.exists("/etc/resolv.conf")
    report(**found)


def read(path, limit=1 << 20):
    with open(path, "rb") as f:
        return f.read(limit)


def write_one(path):
    with open(path, "w") as f:
        f.write("1")


def probe_files():
    found = {"uid": os.getuid(), "gid": os.getgid(), "hostname": socket.gethostname()}
    found["shadow"] = attempt(lambda: read("/etc/shadow") and "read")
    found["passwd"] = attempt(lambda: read("/etc/passwd") and "read")
    found["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    environ = {}
    for pid in found["pids"]:
        for what in ("environ", "cmdline"):
            got = attempt(lambda p=pid, w=what: read(f"/proc/{p}/{w}").decode("utf-8", "replace"))
            environ[f"{pid}/{what}"] = got
    found["proc"] = environ
    found["proc_1_environ"] = environ.get("1/environ")
    found["cap_eff"] = [line.split()[1] for line in read("/proc/self/status").decode().splitlines()
                        if line.startswith("CapEff")][0]
    other = os.environ.get("PROBE_OTHER_PATH", "")
    found["other_host_path"] = attempt(lambda: os.listdir(other)) if other else None
    marker = os.environ.get("PROBE_MARKER", "").encode()
    seen = []
    # every file it can see, but the OS's /usr (bound from the host's own /usr, where the
    # marker, made up by the test a moment ago, cannot be) and the kernel's trees
    for top in ("/",):
        for dirpath, dirnames, filenames in os.walk(top):
            if dirpath in ("/proc", "/sys", "/dev", "/usr") or dirpath.startswith(
                    ("/proc/", "/sys/", "/dev/", "/usr/")):
                dirnames[:] = []
                continue
            for name in filenames:
                path = os.path.join(dirpath, name)
                try:
                    if marker and os.path.isfile(path) and marker in read(path, 4 << 20):
                        seen.append(path)
                except OSError:
                    pass
    found["marker_seen_at"] = seen
    writes = {}
    for path in ("/x", "/bot/x", "/runtime/x", "/usr/x", "/usr/bin/x", "/etc/x", "/dev/x",
                 "/dev/shm/x", "/run/tienlen/x", "/run/tienlen/referee/x", "/proc/x", "/tmp/x"):
        writes[path] = attempt(lambda p=path: write_one(p))
    found["writes"] = writes
    # one file over the file-size cap, then the tmpfs filled up
    def big(path, total):
        written = 0
        chunk = b"\0" * (1 << 20)
        try:
            with open(path, "wb") as f:
                while written < total:
                    f.write(chunk)
                    f.flush()
                    written += len(chunk)
        except OSError as exc:
            return {"written_mib": written >> 20, "error": f"errno {exc.errno}"}
        return {"written_mib": written >> 20, "error": None}

    found["one_big_file"] = big("/tmp/big", 64 << 20)
    os.unlink("/tmp/big")
    fill = []
    for i in range(40):
        result = big(f"/tmp/fill{i}", 4 << 20)
        fill.append(result["written_mib"])
        if result["error"]:
            found["fill_error"] = result["error"]
            break
    found["tmp_filled_mib"] = sum(fill)
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    found["unshare_user"] = "ok" if libc.unshare(0x10000000) == 0 else f"errno {ctypes.get_errno()}"
    found["mount_tmpfs"] = ("ok" if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0
                            else f"errno {ctypes.get_errno()}")
    report(**found)


def probe_forks():
    children, error = 0, None
    for _ in range(300):
        try:
            pid = os.fork()
        except OSError as exc:
            error = f"errno {exc.errno}"
            break
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children += 1
    report(children=children, error=error)


def probe_memory():
    blocks = []
    for i in range(48):  # 48 x 64 MiB = 3 GiB, every page written
        blocks.append(b"x" * (64 << 20))
        print(f"allocated {(i + 1) * 64} MiB", flush=True)
    report(allocated_mib=48 * 64)


def probe_spin():
    seconds = float(os.environ.get("PROBE_SECONDS", "4"))
    data = b"\1" * (1 << 20)
    start = time.monotonic()

    def spin():
        import hashlib

        while time.monotonic() - start < seconds:
            hashlib.sha256(data).digest()  # releases the GIL: real parallel work

    threads = [threading.Thread(target=spin) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report(wall=time.monotonic() - start, cpu=time.process_time())


def probe_flood():
    chunk = b"e" * (1 << 20)
    for _ in range(1024):  # 1 GiB
        sys.stderr.buffer.write(chunk)
    sys.stderr.buffer.flush()
    print("flood done", flush=True)


def probe_grandchild():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            if os.fork() == 0:  # double fork: the grandchild's parent exits
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                print(f"grandchild {os.getpid()} running", flush=True)
                while True:
                    time.sleep(1)
            os._exit(0)
        while True:
            time.sleep(1)
    while True:
        time.sleep(1)


def probe_sleep():
    print("sleeping", flush=True)
    time.sleep(120)


def probe_nohop():
    """What the directory of the referees' own sockets (no hop) shows, and what it lets do."""
    local = os.environ.get("TIENLEN_REFEREE_LOCAL", "")
    found = {"env_local": local, "server": os.environ.get("TIENLEN_SERVER", ""),
             "run_tienlen": sorted(os.listdir("/run/tienlen"))}
    found["local"] = attempt(lambda: sorted(os.listdir(local or "/run/tienlen/local")))
    found["secret_by_host_path"] = attempt(lambda: read(os.environ["PROBE_SECRET"]) and "read")
    found["secret_beside"] = attempt(lambda: read(f"{local}/../referee.env") and "read")
    found["write"] = attempt(lambda: write_one(f"{local}/planted"))
    binder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    found["bind"] = attempt(lambda: binder.bind(f"{local}/fake.sock"))
    found["connect"] = {}
    for name in (found["local"] if isinstance(found["local"], list) else []):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        found["connect"][name] = attempt(lambda n=name, s=s: s.connect(f"{local}/{n}"))
        s.close()
    report(**found)


PROBES = {"nohop": probe_nohop, "net": probe_network, "files": probe_files, "forks": probe_forks,
          "memory": probe_memory, "spin": probe_spin, "flood": probe_flood,
          "grandchild": probe_grandchild, "sleep": probe_sleep}

if MODE == "crash":
    raise ValueError("the bot's own bug")
if MODE == "exit3":
    os._exit(3)
if MODE in PROBES:
    PROBES[MODE]()
    sys.stdout.flush()
    os._exit(0)


class Probe(Bot):
    def play(self, view):
        return view.legal_plays()[0] if view.legal_plays() else view.pass_turn()
