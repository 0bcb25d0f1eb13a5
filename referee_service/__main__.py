"""`tienlen-referee` / `python -m referee_service`: run the referee server.

Every flag has an environment variable, so the Docker image is configured by environment
alone. SIGTERM or Ctrl-C shuts down gracefully (running tables get --shutdown-grace
seconds to finish, then are aborted with a resumable result).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from referee_service import logs
from referee_service.admission import (
    DEFAULT_ADMISSION_BURST,
    DEFAULT_ADMISSION_LAG_S,
    DEFAULT_ADMISSION_RATE,
)
from referee_service.auth import load_token_store
from referee_service.organizer import DEFAULT_CAPACITY
from referee_service.pool import DEFAULT_HEARTBEAT_S, load_pool_registry
from referee_service.server import Referee, RefereeConfig, RefereeUnixError

log = logging.getLogger("referee_service.main")


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


#: Where this host's referees put their unix sockets for hosted bots (no hop), when it
#: exists: the runners' default too (tournaments.hosting.process.DEFAULT_REFEREE_SOCKETS).
DEFAULT_UNIX_DIR = "/run/tienlen/referees"


def _default_unix_dir() -> str | None:
    return DEFAULT_UNIX_DIR if os.path.isdir(DEFAULT_UNIX_DIR) else None


# String defaults from the environment go through each flag's `type`, so a bad value in
# the environment gets argparse's one-line error naming the flag, like a bad flag would.
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tienlen-referee",
        description="The Tiến Lên referee: a gRPC server playing tables between bots.",
        epilog="`tienlen-referee play --server HOST:PORT --seats A,B,... --games N` has a "
               "running referee play one table and prints the result (see its --help).")
    parser.add_argument("--listen", default=_env("TIENLEN_REFEREE_LISTEN", "127.0.0.1:50051"),
                        help="host:port to listen on (env TIENLEN_REFEREE_LISTEN)")
    parser.add_argument("--organizer-token",
                        default=_env("TIENLEN_ORGANIZER_TOKEN", _env("REFEREE_ORGANIZER_TOKEN")),
                        help="credential of the organiser API (env TIENLEN_ORGANIZER_TOKEN "
                             "or REFEREE_ORGANIZER_TOKEN); without it the API refuses calls")
    parser.add_argument("--token-store", default=_env("TIENLEN_TOKEN_STORE", "env"),
                        help="bot tokens: 'env' (TIENLEN_BOT_TOKENS=bot_id:token,...), "
                             "'file:PATH' (JSON), or 'module:Class', e.g. "
                             "tournaments.token_store:DjangoTokenStore (env TIENLEN_TOKEN_STORE)")
    parser.add_argument("--pool", default=_env("TIENLEN_REFEREE_POOL", "auto"),
                        help="register in a referee pool so bots and workers find this "
                             "referee: 'auto' (the token store's pool, if it has one: the "
                             "platform's DjangoTokenStore does), 'none', or 'module:Class' "
                             "(env TIENLEN_REFEREE_POOL)")
    parser.add_argument("--advertise", default=_env("TIENLEN_REFEREE_ADVERTISE"),
                        metavar="HOST:PORT",
                        help="the address bots and workers reach this referee at, told to "
                             "the pool (default: the --listen address, or this host's name "
                             "when listening on every interface; env "
                             "TIENLEN_REFEREE_ADVERTISE)")
    parser.add_argument("--unix-dir", default=_env("TIENLEN_REFEREE_UNIX_DIR", _default_unix_dir()),
                        metavar="DIR",
                        help="also listen (without TLS) on a unix socket in DIR, named after "
                             "the advertised address, so hosted bots of a runner on this host "
                             "connect straight, with no relay (DIR holds referee sockets only; "
                             f"docs/hosting.md, 'No hop'; default {DEFAULT_UNIX_DIR} if it exists; "
                             "'none': TCP only; env TIENLEN_REFEREE_UNIX_DIR)")
    parser.add_argument("--referee-id", default=_env("TIENLEN_REFEREE_ID"),
                        help="this referee's id in the pool (default: host name and a "
                             "random suffix, new at every start; env TIENLEN_REFEREE_ID)")
    parser.add_argument("--capacity", type=int,
                        default=_env("TIENLEN_REFEREE_CAPACITY", str(DEFAULT_CAPACITY)),
                        help="tables played at once; more are refused and the pool routes "
                             "them elsewhere (env TIENLEN_REFEREE_CAPACITY)")
    parser.add_argument("--pool-heartbeat", type=float,
                        default=_env("TIENLEN_POOL_HEARTBEAT_S", str(DEFAULT_HEARTBEAT_S)),
                        help="seconds between pool heartbeats (env TIENLEN_POOL_HEARTBEAT_S)")
    parser.add_argument("--admission-rate", type=float,
                        default=_env("TIENLEN_ADMISSION_RATE", str(DEFAULT_ADMISSION_RATE)),
                        help="connecting bots taken on a second (their token check and "
                             "Welcome); more wait their turn, none is refused; 0: no pacing "
                             "(env TIENLEN_ADMISSION_RATE)")
    parser.add_argument("--admission-burst", type=int,
                        default=_env("TIENLEN_ADMISSION_BURST", str(DEFAULT_ADMISSION_BURST)),
                        help="connecting bots taken on at once before --admission-rate "
                             "paces them (env TIENLEN_ADMISSION_BURST)")
    parser.add_argument("--admission-lag-ms", type=float,
                        default=_env("TIENLEN_ADMISSION_LAG_MS",
                                     f"{DEFAULT_ADMISSION_LAG_S * 1000:g}"),
                        help="while the referee's event loop comes round later than this "
                             "(mean over 0.25 s: its tables busy), connecting bots are taken "
                             "on more slowly, down to a quarter of --admission-rate; 0: a "
                             "fixed rate (env TIENLEN_ADMISSION_LAG_MS)")
    parser.add_argument("--max-message-bytes", type=int,
                        default=_env("TIENLEN_MAX_MESSAGE_BYTES", "65536"))
    parser.add_argument("--rate-limit", type=int,
                        default=_env("TIENLEN_RATE_LIMIT", "50"),
                        help="messages per second per bot, all its streams together, "
                             "answers to move requests not counted (burst: twice that; "
                             "env TIENLEN_RATE_LIMIT)")
    parser.add_argument("--max-streams-per-bot", type=int,
                        default=_env("TIENLEN_MAX_STREAMS_PER_BOT", "4"),
                        help="open streams per bot token; more are refused "
                             "(env TIENLEN_MAX_STREAMS_PER_BOT)")
    parser.add_argument("--max-tables-per-bot", type=int,
                        default=_env("TIENLEN_MAX_TABLES_PER_BOT", "64"),
                        help="tables a bot plays at once across all its streams "
                             "(env TIENLEN_MAX_TABLES_PER_BOT)")
    parser.add_argument("--shutdown-grace", type=float,
                        default=_env("TIENLEN_SHUTDOWN_GRACE", "30"),
                        help="seconds running tables get to finish on shutdown")
    parser.add_argument("--tls-cert", type=Path, default=_env("TIENLEN_TLS_CERT"),
                        help="PEM certificate chain: serve TLS (with --tls-key; env "
                             "TIENLEN_TLS_CERT)")
    parser.add_argument("--tls-key", type=Path, default=_env("TIENLEN_TLS_KEY"),
                        help="PEM private key for --tls-cert (env TIENLEN_TLS_KEY)")
    parser.add_argument("--log-level", type=str.lower,
                        choices=("debug", "info", "warning", "error"),
                        default=_env("TIENLEN_LOG_LEVEL", "info"))
    parser.add_argument("--log-format", choices=("json", "text"),
                        default=_env("TIENLEN_LOG_FORMAT", "json"))
    return parser


def _ensure_platform_on_path() -> None:
    # A Django-backed token store lives in the platform; its project package is under
    # platform/, which is a source root (never a package: it would shadow the stdlib).
    platform_dir = Path(__file__).resolve().parent.parent / "platform"
    if platform_dir.is_dir() and str(platform_dir) not in sys.path:
        sys.path.append(str(platform_dir))


#: The cyclic garbage collector's thresholds in a referee process (Python's: 700, 10, 10).
GC_THRESHOLDS = (50_000, 20, 20)


def _tune_gc() -> None:
    """Collect cyclic garbage less often, and never look again at what start-up made.

    Each connected bot holds a few dozen objects (its stream, session, queue, tasks) that
    live as long as it does; with Python's default thresholds a burst of connects ran
    young collections every 700 allocations and full ones over the ever larger heap:
    12 % of the referee's CPU while 5,000 bots connected (perf, benchmarks/README.md).
    The referee's garbage is mostly freed by reference counting; what the collector
    finds is at most a burst's worth of objects held a little longer."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


async def _serve(args: argparse.Namespace) -> int:
    _ensure_platform_on_path()
    try:
        store = load_token_store(args.token_store)
        pool = load_pool_registry(args.pool, store)
    except (ValueError, ImportError) as exc:
        print(f"tienlen-referee: {exc}", file=sys.stderr)
        return 2
    if bool(args.tls_cert) != bool(args.tls_key):
        print("tienlen-referee: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2
    try:
        tls_cert = Path(args.tls_cert).read_bytes() if args.tls_cert else None
        tls_key = Path(args.tls_key).read_bytes() if args.tls_key else None
    except OSError as exc:
        print(f"tienlen-referee: cannot read TLS file: {exc}", file=sys.stderr)
        return 2
    config = RefereeConfig(
        listen=args.listen, organizer_token=args.organizer_token,
        tls_cert=tls_cert, tls_key=tls_key,
        max_message_bytes=args.max_message_bytes, rate_limit=args.rate_limit,
        max_tables_per_bot=args.max_tables_per_bot,
        max_streams_per_bot=args.max_streams_per_bot,
        shutdown_grace_s=args.shutdown_grace, capacity=args.capacity,
        advertise=args.advertise, referee_id=args.referee_id,
        pool_heartbeat_s=args.pool_heartbeat, admission_rate=args.admission_rate,
        admission_burst=args.admission_burst, admission_lag_s=args.admission_lag_ms / 1000,
        unix_dir=None if args.unix_dir in (None, "", "none") else args.unix_dir)
    referee = Referee(config, store, pool)
    try:
        await referee.start()
    except (OSError, RuntimeError) as exc:
        where = "its unix socket" if isinstance(exc, RefereeUnixError) else args.listen
        print(f"tienlen-referee: cannot listen on {where}: {exc}", file=sys.stderr)
        return 1
    _tune_gc()
    if not args.organizer_token:
        log.warning("no organiser token: the organiser API refuses every call",
                    extra={"event": "organizer_disabled"})
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("shutting down", extra={"event": "shutdown", "grace_s": args.shutdown_grace})
    await referee.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["play"]:
        from referee_service.play import main as play_main

        return play_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.max_message_bytes < 1024:
        parser.error("--max-message-bytes must be at least 1024")
    if args.pool_heartbeat <= 0:
        parser.error("--pool-heartbeat must be a positive number of seconds")
    if args.advertise:
        host, sep, port = args.advertise.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            parser.error(f"--advertise must be HOST:PORT, got {args.advertise!r}")
    if args.referee_id is not None and not 1 <= len(args.referee_id) <= 64:
        parser.error("--referee-id must be 1-64 characters")
    for flag in ("rate_limit", "max_streams_per_bot", "max_tables_per_bot", "capacity"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if os.environ.get("TIENLEN_MAX_TABLES_PER_STREAM"):
        parser.error("TIENLEN_MAX_TABLES_PER_STREAM is gone: the cap is per bot now, "
                     "set TIENLEN_MAX_TABLES_PER_BOT")
    if args.admission_rate < 0 or args.admission_burst < 1 or args.admission_lag_ms < 0:
        parser.error("--admission-rate and --admission-lag-ms cannot be negative, "
                     "--admission-burst must be at least 1")
    if args.shutdown_grace < 0:
        parser.error("--shutdown-grace cannot be negative")
    with logs.configured(args.log_level, args.log_format):
        return asyncio.run(_serve(args))


if __name__ == "__main__":
    raise SystemExit(main())
