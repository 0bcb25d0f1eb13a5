"""Pure scheduling: round-robin designs, seat balancing, knockout brackets, ladder pairing.

No Django here: these functions take and return plain data, so they are tested as
properties (Hypothesis) and reused by services and benchmarks.
"""
