"""Settings for the whole suite.

Hypothesis: no per-example deadline. A property's examples are checked for what they
assert, not for how fast they run; on a loaded 2-core CI machine a 200 ms deadline failed
examples that were correct (speed is measured by benchmarks/, not by tests)."""

import signal

from hypothesis import settings

settings.register_profile("tienlen", deadline=None)
settings.load_profile("tienlen")

# A suite started in the background by a non-interactive shell (`make test &`, a CI runner's
# script) inherits SIGINT ignored, as POSIX has such shells do for asynchronous commands;
# every process the tests start would inherit that too, and the tests that press Ctrl-C on
# one (the arena, `tienlen-bot run`, the demo) would wait for it forever. Python's own
# handler again, so children start with the default disposition and install theirs.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_runtest_setup(item) -> None:
    """A browser test without chromium skips (fails with TIENLEN_REQUIRE_SERVERS) before its
    fixtures start a server: the skip is raised here, in tests/needs.py, so pytest's summary
    folds every browser test's skip into one line instead of one line per test."""
    if item.get_closest_marker("browser"):
        from tests.needs import need_chromium

        need_chromium()
