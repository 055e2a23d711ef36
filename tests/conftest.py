"""Shared fixtures. The whole test session uses its own database file (KNEEPOINT_DB)."""

from __future__ import annotations

import faulthandler
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

import engine  # noqa: F401  (one BLAS thread, set before numpy first loads: engine/__init__.py)

# Timing is not what the property tests check, and a CI machine shares its cores: no per-example deadline
# (speed goals live in benchmarks/). Tests that set their own settings keep them.
settings.register_profile("kneepoint", deadline=None)
settings.load_profile("kneepoint")

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "data" / "seed"

# Set before any test imports the app, so nothing writes into the checkout's data/.
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="kneepoint-tests-"))
os.environ["KNEEPOINT_DB"] = str(_SESSION_DIR / "kneepoint.duckdb")
os.environ["KNEEPOINT_DEBUG"] = "1"  # the CLI re-raises internal errors under test, so a bug still fails a test


# A test that hangs (a deadlock, a wait that can never be met) ends the run with every thread's stack after this
# long, instead of silently eating CI's whole time limit. The slowest test (the README walk-through in a browser)
# takes about 2 minutes, its module's server and browser start included, on a busy 2-core machine.
HANG_S = 900


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    # wraps setup, call and teardown, so a fixture that hangs (a server, a cluster) is caught too
    faulthandler.dump_traceback_later(HANG_S, exit=True, file=sys.__stderr__)  # not pytest's capture
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


@pytest.fixture(scope="session")
def store():
    from engine.store import Store

    return Store()


@pytest.fixture(scope="session")
def catalog(store):
    return store.catalog()


@pytest.fixture(scope="module")
def snapshot_db_built(tmp_path_factory) -> Path:
    """A database built once per test module, for the tests of the rows snapshot (engine.store.snapshot): they
    write beside it, so not the session's."""
    from engine.store import Store

    path = tmp_path_factory.mktemp("built") / "k.duckdb"
    Store(path).close()
    return path


@pytest.fixture
def snapshot_db(snapshot_db_built, tmp_path) -> Path:
    """This test's own copy of that database: a new file, so its snapshot is its own (the snapshot of another file
    is never taken for it)."""
    path = tmp_path / "k.duckdb"
    shutil.copyfile(snapshot_db_built, path)
    return path


@pytest.fixture
def seed_copy(tmp_path) -> Path:
    """A private copy of the seed tables that a test may break."""
    dst = tmp_path / "seed"
    shutil.copytree(SEED, dst, ignore=shutil.ignore_patterns("*.md"))
    return dst


def pytest_sessionfinish(session, exitstatus):
    """A run that passes no test at all is a failure, not a success."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = len(reporter.stats.get("passed", [])) if reporter else 0
    if exitstatus == 0 and passed == 0:
        session.exitstatus = 1
        if reporter:
            reporter.write_line("error: no test passed (all skipped or none collected)", red=True)
    shutil.rmtree(_SESSION_DIR, ignore_errors=True)


@pytest.fixture
def design():
    """The app run once on its default page, Design (AppTest)."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at
