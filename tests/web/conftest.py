"""Fixtures of the web tests: data builders, a browser for the Chromium tests."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.logsafe import preserved_logging
from tests.needs import need_chromium, need_postgresql

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "web"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture(autouse=True)
def _clear_cache() -> Iterator[None]:
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def world(db):
    from tests.web.factories import make_world

    return make_world()


@pytest.fixture(scope="module")
def browser_instance():
    """One Chromium per test module: closed before other suites' asyncio tests run."""
    chromium = need_chromium()
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


def _open(browser, **context_args):
    context = browser.new_context(**context_args)
    pg = context.new_page()
    pg.set_default_timeout(10_000)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    return context, pg, errors


@pytest.fixture
def page(browser_instance):
    """A desktop page; any JavaScript error on it fails the test."""
    context, pg, errors = _open(browser_instance, viewport={"width": 1280, "height": 900})
    yield pg
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


@pytest.fixture
def phone_page(browser_instance):
    context, pg, errors = _open(
        browser_instance, viewport={"width": 390, "height": 844}, device_scale_factor=2,
        is_mobile=True, has_touch=True,
    )
    yield pg
    context.close()
    assert not errors, f"JavaScript errors: {errors}"


def shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    # The bytes written here: with path= Playwright makes the folder on its loop's default
    # executor, a thread that lives on for the whole run (blamed by the leak check).
    path.write_bytes(page.screenshot(full_page=True))
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def asgi_server(transactional_db):
    """uvicorn serving the project's ASGI application (and its static files) in a thread."""
    need_postgresql("uvicorn serves from another thread; the SQLite test database is in memory")
    import uvicorn
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
    from django.core.asgi import get_asgi_application

    port = _free_port()
    # django.setup() (in get_asgi_application) and uvicorn's Config both configure logging
    # for the process: kept as it was for the tests after this one.
    with preserved_logging():
        server = uvicorn.Server(uvicorn.Config(ASGIStaticFilesHandler(get_asgi_application()),
                                              host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        for _ in range(100):
            if server.started:
                break
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
        server.should_exit = True
        thread.join(10)
