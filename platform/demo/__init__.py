"""Tooling that runs the platform on one machine (`manage.py run_demo`, the end-to-end
tests): process supervision and the demo's terminal output. It sits on top of every layer
(engine, SDK, referee, tournaments, web) and nothing in them imports it."""
