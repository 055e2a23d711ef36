"""Shared pieces of the browser tests: a `streamlit run app.py` server and a Chromium per test module, and
waits on the app's state (never on time).

Skipped locally when /usr/bin/chromium is missing; in CI (CI=true) a missing browser is a failure, because
.ci/run installs it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT
from ui.serve import WARMED

CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "artifacts" / "screenshots"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need_chromium() -> None:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing; .ci/run should have installed Debian's chromium")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install -y chromium)")


def start_server(db: Path, serve: bool = False, **env: str) -> tuple[subprocess.Popen, str]:
    """`streamlit run app.py` (or with `serve`, `python -m ui.serve` as `make run` and the image start it) on a free
    port with its database at `db` and `env` added to the environment; returns the process and its URL once the
    health check answers."""
    port = free_port()
    launch = ["ui.serve"] if serve else ["streamlit", "run", "app.py"]
    proc = subprocess.Popen(
        [sys.executable, "-m", *launch, "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=dict(os.environ, KNEEPOINT_DB=str(db), **env), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail(f"streamlit did not become healthy: {proc.stdout.read()[-2000:]}")
    while serve:  # ui.serve says when its warm-up run is done (or why there is none); the app is ready then
        line = proc.stdout.readline()
        if not line or line.startswith("Kneepoint:"):
            assert line.startswith(WARMED), f"ui.serve: {line!r}"
            break
    return proc, url


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    need_chromium()
    proc, url = start_server(tmp_path_factory.mktemp("db") / "k.duckdb")
    yield url
    stop_server(proc)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


def no_exception(page) -> None:
    errors = page.locator('[data-testid="stException"]')
    assert errors.count() == 0, errors.first.inner_text()[:2000]
    body = page.inner_text("body")
    assert "Traceback" not in body and "Error:" not in body.split("\n")[0]


def close_not_found(page) -> None:
    """Close Streamlit's 'Page not found' dialog, which the first deep link into a freshly started server shows
    over the right page (streamlit/streamlit#9992, a known Streamlit issue with st.navigation); it would
    intercept clicks."""
    dialog = page.get_by_role("dialog").filter(has_text="Page not found")
    if dialog.count():
        page.keyboard.press("Escape")
        dialog.wait_for(state="hidden", timeout=10_000)


def settle(page, timeout_ms: int = 60_000) -> None:
    """Wait until Streamlit has finished running the script (its 'Running...' status is gone)."""
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=timeout_ms)


def metric(page, label: str) -> str:
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def _run_finished(payload) -> bool:
    """Whether a websocket frame from the server is Streamlit's 'script finished' message of a completed run."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    if isinstance(payload, str):
        return False
    try:
        message = ForwardMsg.FromString(payload)
    except Exception:  # a frame that is not one ForwardMsg is not the end of a run
        return False
    return (message.WhichOneof("type") == "script_finished"
            and message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN)


def track_runs(page) -> None:
    """Before opening the app on `page`: follow its Streamlit websocket, so act() can wait for a run's end."""
    page.on("websocket", lambda socket: setattr(page, "_kneepoint_socket", socket))


def act(page, action, timeout_ms: int = 180_000) -> None:
    """Do `action` (a click, a choice) that reruns the script, and wait for the server's message that this run
    finished (read from the websocket: the page's own 'running' indicator can come and go between two polls)."""
    socket = getattr(page, "_kneepoint_socket", None)
    assert socket is not None, "call track_runs(page) before opening the app"
    try:
        with socket.expect_event("framereceived", predicate=_run_finished, timeout=timeout_ms):
            action()
    except Exception as e:  # say where the app stood, for a failure on a loaded CI machine
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "act-timeout.png"), full_page=True)
        raise AssertionError(f"no finished script run after the action ({type(e).__name__}); "
                             f"page ends: {page.inner_text('body')[-600:]!r}") from None
    settle(page, timeout_ms)


def pick(page, box, option: str, typed: str = "", timeout_ms: int = 180_000) -> None:
    """Open the selectbox `box` (optionally typing `typed` to filter it) and click `option`. A click that lands
    while the page reruns can leave the list closed, so the list is reopened until the option shows up: the
    wait is on the option, with the deadline only as a bound (a busy CI machine once lost that click)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    deadline = time.monotonic() + timeout_ms / 1000
    target = page.get_by_role("option", name=option, exact=True)
    while True:
        box.click()
        if typed:
            page.keyboard.type(typed)
        try:
            target.wait_for(state="visible", timeout=10_000)
            target.click(timeout=10_000)
            return
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise
            page.keyboard.press("Escape")
