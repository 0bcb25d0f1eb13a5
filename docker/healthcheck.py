#!/usr/bin/env python
"""Container health probes, one per role (`healthcheck.py web|referee|worker|runner`).

Kept dependency-free beyond what the image already has so a probe can never fail for
reasons other than the service itself; exit status 0 means healthy (Docker's contract).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import urllib.request


def probe_web() -> bool:
    """The web app answers `/healthz` only when it can reach its database."""
    port = os.environ.get("WEB_PORT", "8000")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
        return response.status == 200


def probe_referee() -> bool:
    """The standard gRPC health service of the referee reports SERVING."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    port = os.environ.get("REFEREE_LISTEN", "0.0.0.0:50051").rsplit(":", 1)[1]
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        reply = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
    return reply.status == health_pb2.HealthCheckResponse.SERVING


def probe_worker() -> bool:
    """This container's Celery worker answers a ping through the broker."""
    name = f"{os.environ.get('CELERY_WORKER_NAME', 'worker')}@{socket.gethostname()}"
    result = subprocess.run(
        ["celery", "-A", "tienlen_site.celery:app", "inspect", "ping", "-d", name, "-t", "10"],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.returncode == 0


def probe_runner() -> bool:
    """A runner is healthy while its host can still sandbox bots (the host check, with a
    real sandbox started: a container whose profile changed fails here) and its Celery
    worker answers a ping."""
    check = subprocess.run(
        [sys.executable, "-m", "tournaments.hosting.check"], capture_output=True, text=True, check=False,
    )
    if check.returncode != 0:
        print(check.stdout.strip(), file=sys.stderr)
        return False
    os.environ.setdefault("CELERY_WORKER_NAME", "runner")
    return probe_worker()


PROBES = {"web": probe_web, "referee": probe_referee, "worker": probe_worker, "runner": probe_runner}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in PROBES:
        print(f"usage: healthcheck.py {'|'.join(PROBES)}", file=sys.stderr)
        return 2
    try:
        healthy = PROBES[argv[0]]()
    except Exception as exc:  # any failure to probe is "unhealthy", with the reason logged
        print(f"{argv[0]} unhealthy: {exc}", file=sys.stderr)
        return 1
    return 0 if healthy else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
