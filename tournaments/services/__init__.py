"""Every write of the tournaments app, by concern (HackSoft style: import from the module).

- accounts: organiser checks, API tokens, bots, bot tokens and versions
- tournaments: create, edit a draft, entrants, start, cancel, schedule, finish, and the
  table planning they share (owner rule, deal groups, tables with their committed deals)
- tables: the plan of a table for the referee, forfeits, completing a table, knockout rounds
- recording: recording games (replays, seats, ratings), revealing deals, luck baselines
- ladder: the ladder tick
- entries: entry with consent (invitations, open registration, withdraw, disqualify)
- ratings: rating pools, ratings of bots, recomputing a pool
- verification: verified entry (which accounts are approved; staff approval; e-mail
  confirmation links)

Services validate, write in one transaction and enqueue follow-up work only after commit
(tournaments.jobs); they never import the tasks. Reads are in tournaments.selectors.
"""
