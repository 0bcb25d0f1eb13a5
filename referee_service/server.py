"""Assembling and running the referee: the grpc.aio server, health, reflection, shutdown.

`Referee` is what `tienlen-referee` runs and what tests and the SDK's `check` command
start in-process on a free loopback port (`RefereeThread` for code that is not async).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import stat
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2
from grpc_health.v1.health import aio as health_aio
from grpc_health.v1.health_pb2_grpc import add_HealthServicer_to_server
from grpc_reflection.v1alpha import reflection

from bots_sdk.connecting import referee_socket_name
from bots_sdk.keepalive import KEEPALIVE_TIME_MS, server_keepalive_options
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.protocol.tienlen.v1 import organizer_pb2 as org
from bots_sdk.protocol.tienlen.v1 import organizer_pb2_grpc as org_grpc
from referee_service.admission import (
    DEFAULT_ADMISSION_BURST,
    DEFAULT_ADMISSION_LAG_S,
    DEFAULT_ADMISSION_RATE,
)
from referee_service.auth import StaticTokenStore, TokenStore
from referee_service.gateway import SERVICE_NAME as GATEWAY_SERVICE
from referee_service.gateway import BotGateway, GatewayLimits
from referee_service.house import shutdown_house_workers
from referee_service.organizer import DEFAULT_CAPACITY, OrganizerService
from referee_service.pool import (
    DEFAULT_HEARTBEAT_S,
    BotSlots,
    PoolHeartbeat,
    PoolMember,
    PoolRegistry,
    RefereeReport,
    default_advertise,
)
from referee_service.sessions import (
    DEFAULT_MAX_STREAMS_PER_BOT,
    DEFAULT_MAX_TABLES_PER_BOT,
    DEFAULT_RATE_LIMIT,
    SessionRegistry,
)
from referee_service.unix_sockets import accepts, non_sockets

log = logging.getLogger("referee_service.server")
ORGANIZER_SERVICE = org.DESCRIPTOR.services_by_name["Organizer"].full_name

#: Keepalive as the SDK's clients expect it (bots_sdk/keepalive.py: they must agree).
SERVER_KEEPALIVE = server_keepalive_options()

#: Calls that arrived and that the server has not yet taken up. The asyncio server takes
#: them up one at a time from its event loop, so a burst of connecting bots (a referee
#: starting, or every bot of a restarted referee coming back at once) queues here; gRPC
#: core's defaults, 1,000 calls waiting (past which it cancels those waiting longer than
#: a moment) and 3,000 at most, cancelled every stream of a burst past ~3,000 before its
#: Hello was read: the bot saw CANCELLED, or INTERNAL ("Internal error from Core") when the
#: cancel cut its Hello's write short. A waiting call costs little memory (no handler yet),
#: and each is a bot that will be welcomed within seconds.
MAX_PENDING_CALLS = 100_000


@dataclass(slots=True)
class RefereeConfig:
    listen: str = "127.0.0.1:50051"
    organizer_token: str | None = None
    max_message_bytes: int = 64 * 1024
    rate_limit: int = DEFAULT_RATE_LIMIT  # messages/s per bot, all its streams together
    max_tables_per_bot: int = DEFAULT_MAX_TABLES_PER_BOT
    max_streams_per_bot: int = DEFAULT_MAX_STREAMS_PER_BOT
    hello_timeout_s: float = 10.0
    max_outbox: int = 4096  # messages waiting for a bot that does not read: then closed
    shutdown_grace_s: float = 30.0
    tls_cert: bytes | None = None  # PEM certificate chain; with tls_key: serve TLS only
    tls_key: bytes | None = None
    keepalive_ms: int = KEEPALIVE_TIME_MS  # the clients' ping interval; tests shorten it
    extra_options: list[tuple[str, int | str]] = field(default_factory=list)
    capacity: int = DEFAULT_CAPACITY  # tables at once; more are refused (RESOURCE_EXHAUSTED)
    # Connecting bots' Hellos taken on a second, and at once (referee_service.admission).
    admission_rate: float = DEFAULT_ADMISSION_RATE
    admission_burst: int = DEFAULT_ADMISSION_BURST
    admission_lag_s: float = DEFAULT_ADMISSION_LAG_S  # 0: the rate is fixed
    # Pools (referee_service.pool): where bots and workers reach this referee (default:
    # the listen address, or this host's name when listening on every interface), its id
    # in the pool (default: host name and a random suffix) and the heartbeat period.
    advertise: str | None = None
    referee_id: str | None = None
    pool_heartbeat_s: float = DEFAULT_HEARTBEAT_S
    # A directory of this host's referee sockets (docs/hosting.md, "No hop"): the referee
    # also listens, without TLS, on the unix socket DIR/referee_socket_name(advertise), so
    # a hosted bot on a runner of the same host connects to it straight, not through the
    # runner's relay. The directory holds referee sockets only; None: TCP alone.
    unix_dir: str | None = None


class RefereeUnixError(OSError):
    """The referee's unix socket could not be made (the message says why)."""


def _unix_socket_path(directory: str, advertise: str) -> Path:
    """The path of the referee's socket in `directory`, checked: the directory is a real
    directory (made 0755 if missing) holding nothing but sockets, and no live referee
    listens at that path already (a stale socket of a dead one is replaced)."""
    folder = Path(directory)
    folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    st = folder.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise RefereeUnixError(f"--unix-dir {folder} is not a directory (a link is refused)")
    others = non_sockets(folder)
    if others:
        raise RefereeUnixError(
            f"--unix-dir {folder} must hold referee sockets only (hosted bots see the whole "
            f"directory), it also holds: {', '.join(others[:5])}")
    path = folder / referee_socket_name(advertise)
    if path.exists():
        if accepts(path):
            raise RefereeUnixError(f"another referee already listens on {path} (the same "
                                   f"--advertise {advertise}?)")
        path.unlink()  # a dead referee's
    return path


class Referee:
    """One referee server: bot gateway + organiser API + health + reflection."""

    def __init__(self, config: RefereeConfig, token_store: TokenStore,
                 pool: PoolRegistry | None = None) -> None:
        self.config = config
        self.referee_id = config.referee_id or (
            f"{socket.gethostname()[:40]}-{secrets.token_hex(4)}")
        self.pool = pool
        self.heartbeat: PoolHeartbeat | None = None
        self.started_at = time.time()
        self.registry = SessionRegistry(max_streams_per_bot=config.max_streams_per_bot,
                                        max_tables_per_bot=config.max_tables_per_bot,
                                        rate_limit=config.rate_limit)
        self.gateway = BotGateway(self.registry, token_store, GatewayLimits(
            max_message_bytes=config.max_message_bytes, rate_limit=config.rate_limit,
            max_tables_per_bot=config.max_tables_per_bot,
            max_streams_per_bot=config.max_streams_per_bot,
            hello_timeout_s=config.hello_timeout_s, max_outbox=config.max_outbox,
            admission_rate=config.admission_rate, admission_burst=config.admission_burst,
            admission_lag_s=config.admission_lag_s))
        self.organizer = OrganizerService(self.registry, config.organizer_token,
                                          capacity=config.capacity)
        self.health = health_aio.HealthServicer()
        self.server: grpc.aio.Server | None = None
        self.port = 0
        self.unix_path: Path | None = None  # the unix socket, when config.unix_dir is set

    @property
    def target(self) -> str:
        host = self.config.listen.rsplit(":", 1)[0] or "127.0.0.1"
        return f"{host}:{self.port}"

    @property
    def advertise(self) -> str:
        return self.config.advertise or default_advertise(self.config.listen, self.port)

    def pool_report(self) -> RefereeReport:
        """This referee as its pool heartbeat reports it."""
        return RefereeReport(
            referee_id=self.referee_id, address=self.advertise,
            capacity=self.config.capacity, active_tables=len(self.registry.tables),
            bots={bot_id: BotSlots(free, version, active) for bot_id, (free, active, version)
                  in self.registry.bot_slots().items()},
            started_at=self.started_at, draining=not self.organizer.accepting)

    def _pool_changed(self, members: list[PoolMember]) -> None:
        self.gateway.pool_changed(gw.RefereeMessage(pool=gw.RefereePool(referees=[
            gw.PoolReferee(referee_id=m.referee_id, address=m.address) for m in members])))

    async def start(self) -> int:
        options = [
            ("grpc.max_receive_message_length", self.config.max_message_bytes),
            ("grpc.so_reuseport", 0),
            # Small receive windows: the referee only ever receives small messages
            # (answers, pings, table requests; a larger one still flows, as it is read).
            # With BDP probing gRPC grew each stream's window, and a bot flooding faster
            # than the referee reads it (the rate limit pauses reading) made gRPC take in
            # and buffer megabytes per stream, costing every other table CPU; even the
            # default 64 KiB read-ahead is ~5,000 pings taken in per flooding stream.
            ("grpc.http2.bdp_probe", 0),
            ("grpc.http2.lookahead_bytes", 8192),
            ("grpc.server.max_pending_requests", MAX_PENDING_CALLS),
            ("grpc.server.max_pending_requests_hard_limit", MAX_PENDING_CALLS),
            *server_keepalive_options(self.config.keepalive_ms),
            *self.config.extra_options,
        ]
        server = grpc.aio.server(options=options)
        server.add_generic_rpc_handlers([self.gateway.handler()])
        org_grpc.add_OrganizerServicer_to_server(self.organizer, server)
        add_HealthServicer_to_server(self.health, server)
        services = (GATEWAY_SERVICE, ORGANIZER_SERVICE, reflection.SERVICE_NAME,
                    health_pb2.DESCRIPTOR.services_by_name["Health"].full_name)
        reflection.enable_server_reflection(services, server)
        if self.config.tls_cert and self.config.tls_key:
            credentials = grpc.ssl_server_credentials(
                [(self.config.tls_key, self.config.tls_cert)])
            self.port = server.add_secure_port(self.config.listen, credentials)
        else:
            self.port = server.add_insecure_port(self.config.listen)
        if not self.port:
            raise OSError(f"cannot listen on {self.config.listen}")
        if self.config.unix_dir:
            try:
                path = _unix_socket_path(self.config.unix_dir, self.advertise)
                if not server.add_insecure_port(f"unix:{path}"):
                    raise RefereeUnixError(f"cannot listen on unix:{path}")
            except OSError:
                # an unstarted server keeps its TCP port bound: start it to close it
                await server.start()
                await server.stop(None)
                raise
            self.unix_path = path
        await server.start()
        if self.unix_path is not None:
            # Every local user can reach the TCP port anyway; the sandboxes' slot uids
            # (each its own) must be able to connect.
            os.chmod(self.unix_path, 0o666)
        for name in ("", GATEWAY_SERVICE, ORGANIZER_SERVICE):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self.server = server
        if self.pool is not None:
            self.gateway.referee_id = self.referee_id
            self.heartbeat = PoolHeartbeat(self.pool, self.pool_report, self._pool_changed,
                                           interval_s=self.config.pool_heartbeat_s)
            self.registry.listeners.append(self.heartbeat.wake)
            await self.heartbeat.start()
        log.info("referee listening", extra={
            "event": "listening", "target": self.target, "tls": bool(self.config.tls_cert),
            "referee_id": self.referee_id if self.pool is not None else None,
            "advertise": self.advertise if self.pool is not None else None,
            "unix": str(self.unix_path) if self.unix_path else None})
        # make sure descriptors of the bot protocol are in the default pool for reflection
        assert gw.DESCRIPTOR is not None
        return self.port

    async def stop(self, grace: float | None = None) -> None:
        """Graceful shutdown: refuse new tables and bots, let running tables finish for
        up to `grace` seconds, then abort the rest (each reports ABORTED with the game
        to resume from) and close the server."""
        grace = self.config.shutdown_grace_s if grace is None else grace
        self.organizer.accepting = False
        self.gateway.accepting = False
        if self.heartbeat is not None:
            # Out of the pool first: workers stop routing tables here, and the other
            # referees tell the bots it is gone.
            await self.heartbeat.stop(self.referee_id)
            self.heartbeat = None
        await self.health.enter_graceful_shutdown()
        runners = list(self.registry.tables.values())
        tasks = [r.task for r in runners if r.task is not None]
        if tasks:
            log.info("waiting for tables", extra={"event": "shutdown_wait",
                                                  "tables": len(tasks), "grace_s": grace})
            _, pending = await asyncio.wait(tasks, timeout=grace)
            for runner in runners:
                if runner.task in pending:
                    runner.abort("the referee is shutting down")
            if pending:
                await asyncio.wait(pending, timeout=5)
        for streams in list(self.registry.sessions.values()):
            for session in list(streams):
                session.send(gw.RefereeMessage(error=gw.Error(
                    code=gw.ERROR_CODE_SHUTTING_DOWN, reason="the referee is shutting down",
                    fatal=True)))
                session.close()
        if self.unix_path is not None:
            # gone at once: a hosted bot connected straight here fails over (docs/hosting.md)
            with contextlib.suppress(FileNotFoundError):
                self.unix_path.unlink()
        if self.server is not None:
            await self.server.stop(1.0)
        shutdown_house_workers()
        log.info("referee stopped", extra={"event": "stopped"})

    async def wait(self) -> None:
        if self.server is not None:
            await self.server.wait_for_termination()


@contextlib.asynccontextmanager
async def running_referee(token_store: TokenStore | None = None, *,
                          organizer_token: str | None = "organizer-secret",
                          pool: PoolRegistry | None = None,
                          **config: object) -> AsyncIterator[Referee]:
    """A referee on a free loopback port for the duration of the block (tests, tools)."""
    referee = Referee(RefereeConfig(listen="127.0.0.1:0", organizer_token=organizer_token,
                                    **config),  # type: ignore[arg-type]
                      token_store or StaticTokenStore(), pool)
    await referee.start()
    try:
        yield referee
    finally:
        await referee.stop(grace=0)


class RefereeThread:
    """A referee running in a background thread with its own event loop, for code that
    is not async (the SDK's `check`, the tournament tests, benchmarks)."""

    def __init__(self, token_store: TokenStore | None = None, *,
                 organizer_token: str | None = "organizer-secret", **config: Any) -> None:
        self._store = token_store or StaticTokenStore()
        self._organizer_token = organizer_token
        self._config = config
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="referee", daemon=True)
        self.referee: Referee | None = None
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._serve())
        self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with running_referee(self._store, organizer_token=self._organizer_token,
                                       **self._config) as referee:
                self.referee = referee
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # reported to the starting thread
            self._error = exc
            self._ready.set()

    def start(self) -> RefereeThread:
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise RuntimeError(f"referee failed to start: {self._error}") from self._error
        return self

    @property
    def target(self) -> str:
        assert self.referee is not None, "start() first"
        return self.referee.target

    def stop(self) -> None:
        if self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(30)

    def __enter__(self) -> RefereeThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def referee_in_thread(token_store: TokenStore | None = None,
                      **kwargs: object) -> Iterator[RefereeThread]:
    with RefereeThread(token_store, **kwargs) as thread:  # type: ignore[arg-type]
        yield thread
