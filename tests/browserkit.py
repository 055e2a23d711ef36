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

CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "artifacts" / "screenshots"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing; .ci/run should have installed Debian's chromium")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install -y chromium)")
    port = free_port()
    env = dict(os.environ, KNEEPOINT_DB=str(tmp_path_factory.mktemp("db") / "k.duckdb"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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
    yield url
    proc.terminate()
    proc.wait(timeout=10)


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


# Counts the script runs that finish (the app root's data-test-script-state turning 'notRunning'), so a test can
# wait for the run its own click started rather than for a status widget that may not have appeared yet.
_WATCH_RUNS = """() => {
  if (window.__kpRuns !== undefined) return;
  window.__kpRuns = 0;
  new MutationObserver(records => {
    for (const r of records) {
      if (r.target.getAttribute('data-test-script-state') === 'notRunning') window.__kpRuns++;
    }
  }).observe(document.body, {attributes: true, subtree: true, attributeFilter: ['data-test-script-state']});
}"""
_RUN_DONE = """n => window.__kpRuns > n &&
  document.querySelector('[data-testid=stApp]').getAttribute('data-test-script-state') === 'notRunning'"""


def act(page, action, timeout_ms: int = 180_000) -> None:
    """Do `action` (a click, a choice) that reruns the script, and wait until that run has finished."""
    page.evaluate(_WATCH_RUNS)
    before = page.evaluate("() => window.__kpRuns")
    action()
    page.wait_for_function(_RUN_DONE, arg=before, timeout=timeout_ms)
    settle(page, timeout_ms)
