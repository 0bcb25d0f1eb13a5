"""Keepalive settings of the bot client, the organiser client and the referee, together.

They are in one place because they must agree. A gRPC server counts every client ping
that arrives sooner than its `grpc.http2.min_ping_interval_without_data_ms` after the
previous one (with no data sent in between) as a strike, and after `max_ping_strikes`
strikes closes the connection with GOAWAY `too_many_pings`: the client sees
`UNAVAILABLE: Too many pings` and has to reconnect. The server's minimum is therefore
derived from the client's ping interval (half of it, so timer jitter never strikes), and
the clients keep pinging through long idle waits between tables
(`max_pings_without_data = 0`) so that a dead connection is noticed by both sides.
docs/protocol.md "Limits and keepalive" gives the values to clients in other languages.
"""

from __future__ import annotations

#: How often a client pings an idle connection.
KEEPALIVE_TIME_MS = 20_000


def client_keepalive_options(time_ms: int = KEEPALIVE_TIME_MS) -> list[tuple[str, int]]:
    """Channel options of a client that pings every `time_ms` and gives up on a
    connection whose ping is not answered within half of that."""
    return [
        ("grpc.keepalive_time_ms", time_ms),
        ("grpc.keepalive_timeout_ms", time_ms // 2),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
    ]


def server_keepalive_options(client_time_ms: int = KEEPALIVE_TIME_MS) -> list[tuple[str, int]]:
    """Server options accepting clients built with `client_keepalive_options(client_time_ms)`:
    client pings down to every `client_time_ms / 2` are fine; the server itself pings idle
    clients every 1.5 × `client_time_ms` and drops them after `client_time_ms / 2` silent."""
    return [
        ("grpc.keepalive_time_ms", client_time_ms * 3 // 2),
        ("grpc.keepalive_timeout_ms", client_time_ms // 2),
        ("grpc.keepalive_permit_without_calls", 1),
        # the real option name: "...min_recv_ping_interval..." is silently ignored by gRPC,
        # which then applies its default of 5 minutes and strikes every client ping
        ("grpc.http2.min_ping_interval_without_data_ms", client_time_ms // 2),
        ("grpc.http2.max_ping_strikes", 2),
    ]
