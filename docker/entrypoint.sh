#!/bin/sh
# One entry point for every role of the platform image, so compose files, Kubernetes
# manifests and `docker run` all name roles instead of repeating long commands.
# Every role is configured by environment variables (documented in docker/env.example).
set -eu

role="${1:-web}"
[ "$#" -gt 0 ] && shift

case "$role" in
  web)
    # ASGI (uvicorn) so the live progress stream works; static files come from WhiteNoise.
    exec uvicorn tienlen_site.asgi:application \
      --host 0.0.0.0 --port "${WEB_PORT:-8000}" \
      --workers "${WEB_CONCURRENCY:-2}" \
      --proxy-headers --forwarded-allow-ips "${FORWARDED_ALLOW_IPS:-*}" \
      --no-server-header "$@"
    ;;
  migrate)
    exec python manage.py migrate --noinput "$@"
    ;;
  worker)
    # CELERY_QUEUES: `celery` (tables) and `analysis` (luck baselines) by default; compose
    # runs a worker for each (docs/deployment.md, "Queues").
    exec celery -A tienlen_site.celery:app worker \
      --loglevel "${LOG_LEVEL:-INFO}" \
      --concurrency "${CELERY_CONCURRENCY:-2}" \
      --queues "${CELERY_QUEUES:-celery,analysis}" \
      --hostname "${CELERY_WORKER_NAME:-worker}@%h" "$@"
    ;;
  runner)
    # Hosted bots (docs/hosting.md, "Runners"): a Celery worker of the runner queue only,
    # one process per sandbox slot (TIENLEN_SANDBOX_SLOTS). It starts as root and runs each
    # bot as its own slot uid in its own cgroup. On cgroup v2 the container has a cgroup
    # namespace of its own, mounted read-only: remount it writable (CAP_SYS_ADMIN) and
    # move this process into a leaf, so the bots' cgroups can get the memory, pids and cpu
    # controllers below the container's own (a cgroup with processes cannot delegate them).
    # Whatever fails here, the worker's host check then refuses to start with one line
    # saying what is missing: a bot never runs unsandboxed.
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
      [ -w /sys/fs/cgroup ] || mount -o remount,rw /sys/fs/cgroup 2>/dev/null || true
      if mkdir -p /sys/fs/cgroup/runner 2>/dev/null; then
        echo $$ > /sys/fs/cgroup/runner/cgroup.procs 2>/dev/null || true
      fi
    fi
    exec celery -A tienlen_site.celery:app worker \
      --loglevel "${LOG_LEVEL:-INFO}" \
      --concurrency "${TIENLEN_SANDBOX_SLOTS:-16}" \
      --queues "${TIENLEN_RUNNER_QUEUE:-runner}" \
      --hostname "${CELERY_WORKER_NAME:-runner}@%h" "$@"
    ;;
  beat)
    exec celery -A tienlen_site.celery:app beat \
      --loglevel "${LOG_LEVEL:-INFO}" \
      --scheduler django_celery_beat.schedulers:DatabaseScheduler "$@"
    ;;
  referee)
    # Reads REFEREE_ORGANIZER_TOKEN from the environment (never on the command line), the
    # same secret the workers present. In the pool each referee tells workers and bots where
    # to reach it (TIENLEN_REFEREE_ADVERTISE); by default its own address on the container
    # network, so every replica of a scaled referee service is found at its own address.
    listen="${REFEREE_LISTEN:-0.0.0.0:50051}"
    if [ -z "${TIENLEN_REFEREE_ADVERTISE:-}" ]; then
      TIENLEN_REFEREE_ADVERTISE="$(hostname -i | cut -d' ' -f1):${listen##*:}"
      export TIENLEN_REFEREE_ADVERTISE
    fi
    exec tienlen-referee \
      --listen "$listen" \
      --token-store "${REFEREE_TOKEN_STORE:-tournaments.token_store:DjangoTokenStore}" "$@"
    ;;
  bot)
    # TIENLEN_BOT: an example bot name (random, greedy, heuristic), a bot file or module:Class.
    exec tienlen-bot run "${TIENLEN_BOT:?set TIENLEN_BOT}" \
      --server "${TIENLEN_SERVER:?set TIENLEN_SERVER (host:port of the referee)}" "$@"
    ;;
  manage)
    exec python manage.py "$@"
    ;;
  *)
    exec "$role" "$@"
    ;;
esac
