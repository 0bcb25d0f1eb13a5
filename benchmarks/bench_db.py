"""A benchmark's own PostgreSQL database and Redis DB, emptied and migrated for a run (the
pipeline and recovery benchmarks start from nothing each time)."""

from __future__ import annotations


def fresh_database(db_url: str, broker: str) -> None:
    """Create the database `db_url` names if it is missing, flush the broker's Redis DB (if Redis),
    set Django up, migrate and flush: every run on the same empty schema."""
    import django
    import psycopg
    import redis
    from django.core.management import call_command

    base, _, name = db_url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    if broker.startswith("redis"):  # an in-process broker (memory://) starts empty
        redis.Redis.from_url(broker).flushdb()
    django.setup()
    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
