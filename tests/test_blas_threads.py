"""The engine runs numpy's BLAS on one thread unless the user chose otherwise (engine/__init__.py says why)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# a solve big enough for OpenBLAS to start its workers, then the process's thread count
PROBE = ("import os, numpy; a = numpy.random.default_rng(0).random((400, 400)) + 400 * numpy.eye(400); "
         "numpy.linalg.solve(a, numpy.ones(400)); print(len(os.listdir('/proc/self/task')), "
         "os.environ.get('OPENBLAS_NUM_THREADS'))")


def _threads(code: str, **env: str) -> tuple[int, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean | env, capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    return int(out[0]), out[1]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_importing_the_engine_first_gives_numpy_one_blas_thread():
    one, _ = _threads(PROBE, OPENBLAS_NUM_THREADS="1")
    threads, setting = _threads("import engine; " + PROBE)
    assert setting == "1" and threads == one


def test_a_users_own_blas_setting_is_kept():
    _, setting = _threads("import engine; " + PROBE, OPENBLAS_NUM_THREADS="3")
    assert setting == "3"


def test_app_imports_the_engine_before_anything_that_loads_numpy():
    first = next(line for line in (ROOT / "app.py").read_text().splitlines() if line.startswith(("import", "from")))
    assert first.startswith("import engine")
