"""Admitting a burst of connecting bots (referee_service.admission): the referee paces
their set-up and checks their tokens in batches; every bot is still welcomed, in the order
it said Hello, and none is refused."""

from __future__ import annotations

import asyncio
import threading
import time

import grpc

from bots_sdk.protocol.tienlen.v1 import bot_gateway_pb2 as gw
from referee_service.admission import AdmissionPacer
from referee_service.auth import BotIdentity, StaticTokenStore
from referee_service.server import running_referee

CONNECT = "/tienlen.v1.BotGateway/Connect"


class CountingStore(StaticTokenStore):
    """A static store that records how many tokens each check was asked about, and fails
    for one token (a database error on that bot's check)."""

    def __init__(self, tokens: dict[str, BotIdentity], failing: str = "") -> None:
        super().__init__(tokens)
        self.calls: list[int] = []
        self.failing = failing
        self._lock = threading.Lock()

    def authenticate_bot(self, token: str) -> BotIdentity | None:
        with self._lock:
            self.calls.append(1)
        time.sleep(0.002)  # a query's round trip: the next Hellos arrive meanwhile
        if token == self.failing:
            raise RuntimeError("the database is down")
        return super().authenticate_bot(token)


async def connect_all(target: str, tokens: list[str], gap_s: float) -> tuple[list[str], dict[str, str]]:
    """Open one stream per token, each Hello `gap_s` after the last; the tokens in the
    order their Welcomes came, and the status of each stream that ended without one."""
    welcomed: list[str] = []
    refused: dict[str, str] = {}
    async with grpc.aio.insecure_channel(target) as channel:
        calls = []

        async def bot(token: str) -> None:
            call = channel.stream_stream(CONNECT, request_serializer=None,
                                         response_deserializer=gw.RefereeMessage.FromString)()
            calls.append(call)
            try:
                await call.write(gw.BotMessage(hello=gw.Hello(
                    token=token, protocol_version=1)).SerializeToString())
                async for message in call:
                    if message.WhichOneof("body") == "welcome":
                        welcomed.append(token)
                        return
            except grpc.aio.AioRpcError as exc:
                refused[token] = exc.code().name

        tasks = []
        for token in tokens:
            tasks.append(asyncio.ensure_future(bot(token)))
            await asyncio.sleep(gap_s)
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
        for call in calls:
            call.cancel()
    return welcomed, refused


async def test_bots_beyond_the_admission_rate_are_welcomed_later_in_order_none_refused() -> None:
    tokens = [f"tok-paced-{i:03d}" for i in range(60)]
    store = StaticTokenStore({t: BotIdentity(t, t) for t in tokens})
    async with running_referee(store, admission_rate=40, admission_burst=10) as referee:
        started = time.monotonic()
        welcomed, refused = await connect_all(referee.target, tokens, gap_s=0.002)
        took = time.monotonic() - started
    assert refused == {} and sorted(welcomed) == tokens
    # The burst goes on at once (its Welcomes in any order); every bot beyond it waited
    # its turn and was welcomed in the order it said Hello.
    paced = tokens[10:]
    assert [t for t in welcomed if t in paced] == paced
    # 10 at once, then 40 a second: the last of 60 waits its turn for ~1.25 s
    assert took >= 1.1, f"not paced: 60 bots welcomed in {took:.2f} s"
    assert referee.gateway.pacer.waited >= 30  # most of them (a slow machine spreads some)


async def test_a_flood_of_unknown_tokens_does_not_hold_up_a_real_bot() -> None:
    """Hostile: 300 Hellos with made-up tokens just before a real bot's are refused at
    once and take none of the pacer's turns, so the real bot is welcomed at once."""
    store = StaticTokenStore({"tok-real": BotIdentity("real", "real")})
    flood = [f"tok-fake-{i:03d}" for i in range(300)]
    async with running_referee(store, admission_rate=20, admission_burst=5) as referee:
        started = time.monotonic()
        welcomed, refused = await connect_all(referee.target, [*flood, "tok-real"], gap_s=0.0005)
        took = time.monotonic() - started
    assert welcomed == ["tok-real"]
    assert refused == {t: "UNAUTHENTICATED" for t in flood}
    # paced, the 300 would have taken 15 s of turns at 20 a second before the real bot's
    assert took < 5.0, f"the real bot waited behind the flood: {took:.2f} s"
    assert referee.gateway.pacer.waited == 0


async def test_an_unpaced_referee_welcomes_the_same_burst_at_once() -> None:
    tokens = [f"tok-free-{i:03d}" for i in range(60)]
    store = StaticTokenStore({t: BotIdentity(t, t) for t in tokens})
    async with running_referee(store, admission_rate=0) as referee:
        started = time.monotonic()
        welcomed, refused = await connect_all(referee.target, tokens, gap_s=0.002)
        took = time.monotonic() - started
    assert refused == {} and sorted(welcomed) == tokens
    assert took < 1.0 and referee.gateway.pacer.waited == 0


async def test_tokens_arriving_together_are_checked_in_batches_a_failure_is_that_bots_alone() -> None:
    tokens = [f"tok-batch-{i:03d}" for i in range(200)]
    store = CountingStore({t: BotIdentity(t, t) for t in tokens}, failing=tokens[7])
    async with running_referee(store, admission_rate=0) as referee:
        welcomed, refused = await connect_all(referee.target, tokens, gap_s=0)
        batches = referee.gateway.token_checks.batches
    assert refused == {tokens[7]: "UNAVAILABLE"}  # told to retry later, as before
    assert sorted(welcomed) == tokens[:7] + tokens[8:]
    assert len(store.calls) == 200
    assert batches < 100, f"{batches} thread hops for 200 tokens: not batched"


def test_the_pacer_slows_while_the_loop_comes_round_late_and_recovers_bounded() -> None:
    """The governor on injected lateness and loop times (no clock): a quarter second of
    the loop coming round 30 ms late cuts the rate by a quarter, again and again down to
    its floor (a quarter of the configured rate), never below; once the loop keeps up
    again the rate climbs back a tenth a window, never above the configured rate."""
    pacer = AdmissionPacer(400, 200, lag_target_s=0.010, window_s=0.25)
    now = 0.0

    def window(late_s: float) -> float:
        nonlocal now
        for _ in range(10):  # ten wake-ups in a window, the last one closes it
            now += 0.03
            pacer.observe_lateness(late_s, now)
        return pacer.rate

    assert window(0.001) == 400  # keeping up: at most the configured rate
    assert window(0.030) == 300
    assert window(0.030) == 225
    rates = [window(0.030) for _ in range(10)]
    assert rates[-1] == 100 and min(rates) == 100 and pacer.slowed == 12
    assert window(0.007) == 100  # between half the target and it: held
    assert window(0.002) == 140
    assert [window(0.0) for _ in range(8)][-1] == 400 and pacer.rate == pacer.max_rate
    # Slowed to its floor, then no Hello held back for a second (four windows): the next
    # burst starts as if those windows had kept up, not at the floor.
    for _ in range(12):
        window(0.030)
    assert pacer.rate == 100
    pacer.idle_until(now + 0.1)  # under a window: unchanged
    assert pacer.rate == 100
    pacer.idle_until(now + 1.0)
    assert pacer.rate == 260
    pacer.idle_until(now + 10.0)
    assert pacer.rate == 400


def test_a_fixed_rate_pacer_ignores_lateness() -> None:
    pacer = AdmissionPacer(400, 200, lag_target_s=0)
    for n in range(100):
        pacer.observe_lateness(1.0, n * 0.1)
    assert pacer.rate == 400 and pacer.slowed == 0


async def test_the_released_hellos_keep_their_order_at_the_rate_of_the_moment() -> None:
    """Hellos waiting their turn are released in the order they came, by one task, at
    the rate the governor gives now (not the one when they arrived): a cut takes effect
    for those already waiting. Counted, not timed."""
    pacer = AdmissionPacer(1000, 1, lag_target_s=0.010)
    order: list[int] = []

    async def hello(n: int) -> None:
        await pacer.admit()
        order.append(n)

    tasks = [asyncio.ensure_future(hello(n)) for n in range(30)]
    await asyncio.sleep(0)
    pacer.rate = 1e9  # the governor's rate is read at each release, by the waiting ones too
    await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert order == list(range(30)) and pacer.waited == 29
