"""Tournaments: bots, rating pools, tournaments, tables, games, replays and ratings.

Writes live in `services`, reads in `selectors`; Celery tasks, API views and admin stay thin.
"""
