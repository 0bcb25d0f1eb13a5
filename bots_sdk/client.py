"""The gRPC bot client: connects a Bot class to the referee and keeps it playing.

One stream per referee carries every table this process plays there (docs/protocol.md);
given one referee of a pool, the client finds the others from its `RefereePool` messages
and keeps a stream to each live one, so a bot owner runs one process with one address
however many referees the platform runs. The client never lets
the bot's own failures end the process: an exception, a timeout or an illegal answer is
logged with the referee's reason and replaced by the fallback move the referee itself
would play (pass where allowed, else the weakest play), which spares the bot a strike
where that is still possible. A first connection that fails is reported at once (most
likely a wrong address); after one that worked, connection failures are retried with
exponential backoff, and the referee resumes our seats when we come back within its grace
period.

The client is split by what each part does: `connecting.py` (targets and the one-line
errors of a failed first connection), `referee_link.py` (one stream to one referee),
`table_messages.py` (what the client does with each message about a table and how a
move is answered), `tally.py` (what it counts). This module holds `BotClient` itself (its
life, the pool it follows, the share of `max_tables` each stream may start) and keeps
every public name importable from here, as the guides show them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import grpc

from bots_sdk.bot import Bot
from bots_sdk.connecting import (
    CHANNEL_OPTIONS,
    MAX_RECEIVE,
    ClientError,
    first_connection_error,
    parse_target,
    referee_socket_map,
    referee_socket_name,
)
from bots_sdk.keepalive import KEEPALIVE_TIME_MS, client_keepalive_options
from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from bots_sdk.referee_link import (
    PROTOCOL_VERSION,
    SDK_NAME,
    SDK_VERSION,
    Call,
    Leaving,
    RefereeLink,
)
from bots_sdk.table_messages import MAX_MIN_ANSWER_MS, TableMessages, TableState
from bots_sdk.tally import ClientStats, ErrorTally

__all__ = ["CHANNEL_OPTIONS", "MAX_MIN_ANSWER_MS", "PROTOCOL_VERSION", "SDK_NAME", "SDK_VERSION",
           "BotClient", "ClientError", "ClientStats", "ErrorTally", "Leaving", "RefereeLink",
           "TableState", "first_connection_error", "install_signal_handlers", "parse_target",
           "referee_socket_map", "referee_socket_name"]

log = logging.getLogger("bots_sdk.client")


class BotClient(TableMessages):
    """Plays `bot_factory()` instances (one per table) on a referee, or on every referee of
    its pool.

    Given one referee's address, the client opens one stream there; if that referee is in
    a pool it lists the pool's referees (`RefereePool`), and the client keeps one stream to
    each live one, following referees as they join and leave, and shares `max_tables`
    between them (each stream is told the capacity the others leave free). A table is
    played on one stream at a time: a table resumed on another referee (its referee died)
    moves there with its bot instance.

    `run()` returns when `stop()` was called and the running tables are finished (or at
    once when `stop(force=True)`), and raises ClientError when the referee refuses us."""

    def __init__(
        self,
        bot_factory: Callable[[], Bot],
        *,
        target: str,
        token: str,
        max_tables: int = 1,
        bot_name: str | None = None,
        bot_version: str | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        reconnect: bool = True,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = 30.0,
        max_connect_attempts: int | None = None,
        retry_first_connection: bool = False,
        safety_margin_ms: int = 30,
        stop_when_idle: bool = False,
        keepalive_ms: int = KEEPALIVE_TIME_MS,
        follow_pool: bool = True,
        min_answer_ms: int | None = None,
        address_map: Callable[[str], str] | None = None,
        seed_fallback: str | None = None,
    ) -> None:
        if not token:
            raise ClientError("no bot token: pass --token or set TIENLEN_TOKEN")
        if min_answer_ms is not None and not 0 <= min_answer_ms <= MAX_MIN_ANSWER_MS:
            raise ClientError(f"min_answer_ms must be 0..{MAX_MIN_ANSWER_MS}, got {min_answer_ms}")
        self.bot_factory = bot_factory
        self.target = target
        self.token = token
        self.max_tables = max(1, max_tables)
        probe = bot_factory if isinstance(bot_factory, type) else type(bot_factory())
        self.bot_name = bot_name or getattr(probe, "display_name", lambda: probe.__name__)()
        self.bot_version = bot_version or getattr(probe, "version", "0")
        self.credentials = credentials
        self.reconnect = reconnect
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.max_connect_attempts = max_connect_attempts
        # Until a first Welcome, a failure is most likely a wrong address: say so at once
        # instead of retrying forever (unless asked to wait for a referee still starting).
        self.retry_first_connection = retry_first_connection
        self.ever_welcomed = False
        self.safety_margin_ms = safety_margin_ms
        # Hold each answer until this long after its request (None: the bot's own
        # `min_answer_ms`), so the seat's timing says nothing about its hand.
        self.min_answer_ms = min_answer_ms
        self.stop_when_idle = stop_when_idle
        # False: stay on the given referee even if it lists a pool.
        self.follow_pool = follow_pool
        # Where to dial a referee the pool lists (its address as listed -> a target), for
        # a bot that reaches referees through local sockets (referee_socket_map); None:
        # dial the listed address itself.
        self.address_map = address_map
        # Where the given address's stream goes instead if its first connection fails
        # (a hosted bot started on a local referee's own socket: its relay's seed socket).
        self.seed_fallback = seed_fallback
        # keepalive_ms: ping interval; keep the default, which the referee expects
        self.channel_options = [*client_keepalive_options(keepalive_ms), MAX_RECEIVE]
        self.stats = ClientStats()
        self.errors = ErrorTally()
        self.tables: dict[str, TableState] = {}
        self.links: list[RefereeLink] = []  # one per referee; links[0] is the given address
        # Spare threads: a play() that overran its time keeps its thread until it returns,
        # and must not make the next moves wait behind it.
        self._executor = ThreadPoolExecutor(
            max_workers=2 * self.max_tables + 2, thread_name_prefix="bot-play"
        )
        self._stopping = False
        self._force = False
        self._stop_event: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._links_changed: asyncio.Event | None = None
        self.connected: asyncio.Event | None = None  # the first stream's (run() creates it)

    # ------------------------------------------------------------------ compatibility
    @property
    def welcome(self) -> gw.Welcome | None:
        """The given referee's Welcome (the first stream's)."""
        return self.links[0].welcome if self.links else None

    @property
    def _call(self) -> Call | None:  # the given referee's stream (a test cancels it to drop it)
        return self.links[0].call if self.links else None

    # ------------------------------------------------------------------ lifecycle
    def stop(self, force: bool = False) -> None:
        """Ask the client to leave: finish the running tables (or not, with force)."""
        self._stopping = True
        self._force = self._force or force
        if self._stop_event is not None:
            self._stop_event.set()
        for link in self.links:
            link.wake.set()

    async def run(self) -> None:
        self._stop_event = asyncio.Event()
        self._links_changed = asyncio.Event()
        seed = self._add_link(self.target, seed=True)
        self.connected = seed.connected
        try:
            while True:
                running = {link.task for link in self.links if link.task is not None}
                if not running:
                    return
                changed = asyncio.ensure_future(self._links_changed.wait())
                done, _ = await asyncio.wait({*running, changed},
                                             return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                self._links_changed.clear()
                for task in done - {changed}:
                    task.result()  # the given referee's ClientError ends the client
                    for link in [x for x in self.links if x.task is task]:
                        link.task = None
                        if not link.seed:
                            self.links.remove(link)
                self._pool_changed()
        finally:
            for link in self.links:
                if link.task is not None:
                    link.task.cancel()
            for task in list(self._tasks):
                task.cancel()
            self._executor.shutdown(wait=False, cancel_futures=True)

    def _add_link(self, target: str, *, seed: bool = False, expected_id: str = "") -> RefereeLink:
        link = RefereeLink(self, target, seed=seed, expected_id=expected_id)
        self.links.append(link)
        link.task = asyncio.ensure_future(link.run())
        if self._links_changed is not None:
            self._links_changed.set()
        return link

    def _fails_fast(self) -> bool:
        return not (self.ever_welcomed or self.retry_first_connection or self._stopping)

    def _channel(self, target: str) -> grpc.aio.Channel:
        if self.credentials:
            return grpc.aio.secure_channel(target, self.credentials, options=self.channel_options)
        return grpc.aio.insecure_channel(target, options=self.channel_options)

    # ------------------------------------------------------------------ the pool
    def _pool_changed(self) -> None:
        """Follow the pool: one stream per live referee (the union of what the connected
        referees list, so one referee's late heartbeat does not flap the list); streams to
        referees no longer listed finish their tables and close."""
        if not self.follow_pool or self._stopping:
            return
        members: dict[str, str] = {}
        for link in self.links:
            if link.connected.is_set():
                for referee_id, address in link.view:
                    members.setdefault(referee_id, address)
        if not members:
            return  # no pool (or no stream up right now): change nothing
        live = [link for link in self.links if not link.retired]
        known: dict[str, RefereeLink] = {}
        for link in live:
            key = link.referee_id or link.expected_id
            if not key:
                continue
            if key in known:
                # Two streams to one referee (the given address is also a listed one):
                # keep the given one, or the older.
                extra = link if not link.seed else known[key]
                known[key] = known[key] if extra is link else link
                extra.retire("another stream already reaches this referee")
            else:
                known[key] = link
        for referee_id, address in sorted(members.items()):
            if referee_id not in known:
                target = self.address_map(address) if self.address_map else address
                log.info("pool: connecting to referee %s at %s%s", referee_id, address,
                         f" through {target}" if target != address else "")
                self._add_link(target, expected_id=referee_id)
        for link in live:
            key = link.referee_id or link.expected_id
            if not link.seed and not link.retired and key and key not in members:
                link.retire("it left the pool")

    def _capacity_changed(self) -> None:
        """Each pool stream may start the tables the others leave free, so the process
        never plays more than max_tables at once (two referees seating it in the same
        instant aside)."""
        total = len(self.tables)
        for link in self.links:
            if not (link.referee_id and link.connected.is_set()):
                continue  # a referee outside any pool: Hello.max_tables stands
            offer = max(0, self.max_tables - (total - len(link.tables())))
            if offer != link.offered:
                log.debug("capacity: %r may start %d table(s) (%d running in the process, "
                          "%d of them there)", link, offer, total, len(link.tables()))
                link.offered = offer
                self._spawn(link.write(gw.BotMessage(capacity=gw.Capacity(max_tables=offer))))

    def _table_done(self, link: RefereeLink) -> None:
        self._capacity_changed()
        if (self._stopping or link.retired) and not link.tables():
            link.wake.set()

def install_signal_handlers(client: BotClient) -> None:
    """Ctrl-C once: finish running tables and leave; twice: leave now."""
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if client._stopping:
            log.warning("second interrupt: leaving now")
            client.stop(force=True)
        else:
            log.warning("interrupt: finishing running tables (Ctrl-C again to leave now)")
            client.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, on_signal)
