"""How a table is played, in one place, each step its own module (in the order a table
meets them; import-linter keeps each step above the ones it uses):

- `lifecycle`: a table's states and the only writes of its status, attempts and lease
  (`TRANSITIONS`; docs/architecture.md has the diagram);
- `leases`: the worker's heartbeat that keeps a playing table's lease, and the reaper that
  finds tables whose worker died;
- `referee`: the typed contract with the referee's organiser API (`TablePlan` in,
  `FinishedGame` and `TableOutcome` out) and the per-process organiser channels;
- `pool`: the referee pool's rows (the referees' heartbeats, what workers and the ladder
  read of it);
- `routing`: which referee of the pool plays a table, and whether another can take it over;
- `stream`: the referee's events read by a thread of their own and handed over in batches;
- `attempt`: one attempt from its plan to what happened (`table_attempt` ->
  `AttemptOutcome`), which `tasks.table_play_task` maps to a transition or a retry.

The services (`tournaments.services`) use the lower steps (the plan starts a table through
`lifecycle`; the recorder's UPDATE is fenced by the lease) and never the attempt, which
calls them.
"""
