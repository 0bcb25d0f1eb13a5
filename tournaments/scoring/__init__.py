"""Scores beyond raw points: luck-adjusted (a baseline per deal and seat) and field
duplicate comparisons. Pure functions, no Django: used by selectors and benchmarks."""
