"""`run(MyBot)`: the one call a bot file needs to join the referee.

Settings come from the command line when given, else from the environment
(`TIENLEN_SERVER`, `TIENLEN_TOKEN`, `TIENLEN_MAX_TABLES`), so the same file runs on a laptop
and in the platform's container without edits. A bot the platform hosts (docs/hosting.md)
is also given `TIENLEN_REFEREE_SOCKETS` (the directory of its local referee sockets: pool
addresses are dialled there, and a first failed connection is retried), perhaps
`TIENLEN_REFEREE_LOCAL` (the referees' own sockets on its runner's host, dialled first:
no hop; `TIENLEN_SERVER_FALLBACK` is then where a first connection that failed tries
next) and `TIENLEN_BOT_VERSION` (the version it announces).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bots_sdk.bot import Bot

__all__ = ["add_connection_args", "connect_and_play", "run"]

DEFAULT_SERVER = "127.0.0.1:50051"


def add_connection_args(parser: argparse.ArgumentParser) -> None:
    env = os.environ
    parser.add_argument(
        "--server",
        default=env.get("TIENLEN_SERVER", DEFAULT_SERVER),
        help="referee HOST:PORT or unix:PATH (env TIENLEN_SERVER; default %(default)s)",
    )
    parser.add_argument(
        "--token",
        default=env.get("TIENLEN_TOKEN", ""),
        help="the bot's secret token (env TIENLEN_TOKEN; prefer the environment, "
        "command lines are visible to other users)",
    )
    parser.add_argument(
        "--max-tables",
        type=int,
        default=int(env.get("TIENLEN_MAX_TABLES", "4")),
        help="tables played at once (env TIENLEN_MAX_TABLES; default %(default)s)",
    )
    parser.add_argument(
        "--name",
        default=env.get("TIENLEN_BOT_NAME") or None,
        help="name announced to the referee (env TIENLEN_BOT_NAME; default: the class's)",
    )
    parser.add_argument(
        "--tls",
        action="store_true",
        default=env.get("TIENLEN_TLS", "") not in ("", "0", "false"),
        help="use TLS (env TIENLEN_TLS=1)",
    )
    parser.add_argument("--ca-cert", type=Path, help="PEM root certificate for --tls")
    parser.add_argument(
        "--exit-when-idle",
        action="store_true",
        help="leave once every table this bot was given has ended (for scripts)",
    )
    parser.add_argument(
        "--min-answer-ms",
        type=int,
        # a string default goes through `type` too: a bad value in the environment is
        # argparse's usual "invalid int value" error
        default=env.get("TIENLEN_MIN_ANSWER_MS") or None,
        metavar="MS",
        help="hold every answer until MS ms after its request, so the other seats cannot "
        "tell your forced moves from your choices by their timing (env "
        "TIENLEN_MIN_ANSWER_MS; default: the bot's min_answer_ms, 0)",
    )
    parser.add_argument(
        "--log-level", default=env.get("TIENLEN_LOG_LEVEL", "INFO"), help="DEBUG, INFO, WARNING"
    )


def configure_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)-7s %(message)s",
        datefmt="%H:%M:%S",
    )


def connect_and_play(bot_cls: type[Bot], args: argparse.Namespace) -> int:
    """Run the client until Ctrl-C (or until idle with --exit-when-idle). Returns an exit
    status; raises ClientError for problems the user must fix (bad token, bad address)."""
    import grpc

    from bots_sdk.client import (
        BotClient,
        ClientError,
        install_signal_handlers,
        parse_target,
        referee_socket_map,
    )

    target = parse_target(args.server)
    # A bot the platform hosts reaches every referee of the pool through a local socket in
    # this directory (docs/hosting.md); its referee may be restarting when it starts, which
    # is no reason to give up.
    sockets = os.environ.get("TIENLEN_REFEREE_SOCKETS", "")
    try:
        bot_cls()  # a constructor that needs arguments is an error now, not at the first table
    except Exception as exc:
        raise ClientError(
            f"{bot_cls.__name__}() failed: {type(exc).__name__}: {exc} "
            "(a bot class must be constructible without arguments)"
        ) from exc
    credentials = None
    if args.tls:
        root = None
        if args.ca_cert:
            try:
                root = args.ca_cert.read_bytes()
            except OSError as exc:
                raise ClientError(f"cannot read --ca-cert: {exc}") from None
        credentials = grpc.ssl_channel_credentials(root_certificates=root)
    client = BotClient(
        bot_cls,
        target=target,
        token=args.token,
        max_tables=args.max_tables,
        bot_name=args.name,
        bot_version=os.environ.get("TIENLEN_BOT_VERSION") or None,  # e.g. a hosted version's
        credentials=credentials,
        stop_when_idle=args.exit_when_idle,
        min_answer_ms=getattr(args, "min_answer_ms", None),
        address_map=referee_socket_map(sockets, os.environ.get("TIENLEN_REFEREE_LOCAL", ""))
        if sockets else None,
        retry_first_connection=bool(sockets),
        seed_fallback=os.environ.get("TIENLEN_SERVER_FALLBACK") or None,
    )

    async def main() -> None:
        install_signal_handlers(client)
        await client.run()

    asyncio.run(main())
    s = client.stats
    logging.getLogger("bots_sdk.client").info(
        "bye: %d tables, %d games, %d moves, %d rejected, %d strikes%s",
        s.tables_done, s.games_done, s.moves, s.rejected, s.strikes,
        f"; the bot's own errors: {client.errors.summary()}" if client.errors.counts else "",
    )
    return 0


def run(bot_cls: type[Bot], argv: Sequence[str] | None = None) -> None:
    """Connect `bot_cls` to the referee and play until interrupted.

    Call it from your bot file: `if __name__ == "__main__": run(MyBot)`."""
    from bots_sdk.client import ClientError

    parser = argparse.ArgumentParser(description=f"Play {bot_cls.display_name()} on a referee.")
    add_connection_args(parser)
    args = parser.parse_args(argv)
    configure_logging(args.log_level)
    try:
        code = connect_and_play(bot_cls, args)
    except ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 2
    except KeyboardInterrupt:
        code = 130
    raise SystemExit(code)
