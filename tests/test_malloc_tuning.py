"""Importing the engine keeps freed memory in the process (glibc; engine/__init__.py says why): a loop that makes and
drops the analytic engine's typical ~1 MB temporaries stops faulting pages in, unless the user tuned malloc."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# a 2 MB array freed (glibc's dynamic rule: heap below 2 MB, trim beyond 4 MB free), then 50 rounds of six 1.2 MB
# arrays made and dropped together, as a timer chain's rows are; printed: the page faults the rounds took
PROBE = ("import numpy as np; m = lambda: int(open('/proc/self/stat').read().split()[9]); np.ones(250_000).sum(); "
         "before = m(); [len([np.ones(150_000) for _ in range(6)]) for _ in range(50)]; print(m() - before)")


def _faults(code: str, **env: str) -> int:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean | env, capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    return int(out[-1])


pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file() or not sys.platform.startswith("linux"),
                                reason="counts page faults in /proc (glibc's malloc)")


def test_importing_the_engine_stops_temporaries_faulting_pages_in():
    plain = _faults(PROBE)
    tuned = _faults("import engine; " + PROBE)
    assert plain > 10_000 and tuned < plain / 10, (plain, tuned)


def test_a_users_own_malloc_setting_is_kept():
    # the user's (here glibc's default) trim threshold: the engine leaves it, so the pages fault in again
    assert _faults("import engine; " + PROBE, MALLOC_TRIM_THRESHOLD_="131072") > 10_000
