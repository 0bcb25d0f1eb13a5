"""Where the client connects, and the one line it says when it cannot.

A target is HOST:PORT, or unix:PATH for a bot the platform hosts (it reaches its referees
through local sockets, docs/hosting.md); a first connection that fails is most likely a
wrong address, so its error says what to check instead of a gRPC status.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

import grpc

from bots_sdk.keepalive import client_keepalive_options

__all__ = ["CHANNEL_OPTIONS", "FATAL_CODES", "MAX_RECEIVE", "ClientError", "first_connection_error",
           "parse_target", "referee_socket_map", "referee_socket_name"]

MAX_RECEIVE = ("grpc.max_receive_message_length", 4 * 1024 * 1024)
# Keepalive agreeing with the referee's (bots_sdk/keepalive.py, docs/protocol.md).
CHANNEL_OPTIONS = [*client_keepalive_options(), MAX_RECEIVE]

# Errors after which retrying cannot help: the token or the request is wrong.
FATAL_CODES = {
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.UNIMPLEMENTED,
}


class ClientError(Exception):
    """The client cannot go on (e.g. the token was refused); the message says why."""


def first_connection_error(target: str, code: grpc.StatusCode | None, details: str) -> str:
    """One line saying why the very first connection failed and what to check."""
    where = f"cannot connect to the referee at {target}"
    text = details or ""
    if "Connection refused" in text:
        return f"{where}: nothing accepts connections there (connection refused); check the host and port"
    if "resolving" in text or "lookup" in text or "Domain name not found" in text:
        host = target.rpartition(":")[0]
        return f"{where}: unknown host {host!r}"
    if "Failed parsing HTTP/2" in text or "HTTP/1" in text:
        return (
            f"{where}: that port answers, but not with gRPC (a web server?); the referee's port "
            "is the one `tienlen-referee --listen` serves (50051 by default), not the web site's"
        )
    if "ssl" in text.lower() or "handshake" in text.lower() or "tls" in text.lower():
        return f"{where}: the TLS handshake failed (is --tls right for this referee?): {text}"
    if code is None:
        return f"{where}: the referee closed the stream before welcoming the bot"
    return f"{where}: {code.name}: {text}"


def parse_target(server: str) -> str:
    """Validate HOST:PORT (or unix:PATH, a local socket: how a bot hosted by the platform
    reaches its referee, docs/hosting.md) early, so a typo is a one-line error, not a hung
    connection."""
    if server.startswith("unix:"):
        if not server[len("unix:"):].strip("/"):
            raise ClientError(f"--server unix:PATH needs a socket path, got {server!r}")
        return server
    host, sep, port = server.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClientError(f"--server must be HOST:PORT or unix:PATH, got {server!r}")
    return server


def referee_socket_name(address: str) -> str:
    """The file name of the local socket that reaches the referee at `address` (HOST:PORT as
    a referee pool lists it), in the directory a hosted bot is given: the platform's relay
    and the client agree on it, so a hosted bot follows the pool with no network of its own
    (docs/hosting.md, "How a hosted bot reaches the referee")."""
    return hashlib.sha256(address.encode()).hexdigest()[:16] + ".sock"


def referee_socket_map(directory: str, local: str = "") -> Callable[[str], str]:
    """An `address_map` for BotClient: each address a referee pool lists becomes the local
    socket for it in `directory` (unix:DIR/NAME, see referee_socket_name); with `local`
    (a hosted bot whose runner shares a host with referees: their own sockets, by the
    same names, docs/hosting.md "No hop"), the referee's own socket there when it has
    one at the time of dialling, else the one in `directory`."""
    base = directory.rstrip("/")
    near = local.rstrip("/")

    def dial(address: str) -> str:
        name = referee_socket_name(address)
        if near and os.path.exists(f"{near}/{name}"):
            return f"unix:{near}/{name}"
        return f"unix:{base}/{name}"

    return dial

