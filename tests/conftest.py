"""Settings for the whole suite.

Hypothesis: no per-example deadline. A property's examples are checked for what they
assert, not for how fast they run; on a loaded 2-core CI machine a 200 ms deadline failed
examples that were correct (speed is measured by benchmarks/, not by tests)."""

from hypothesis import settings

settings.register_profile("tienlen", deadline=None)
settings.load_profile("tienlen")
