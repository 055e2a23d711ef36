"""CLI start-up: wall time of `python -m engine --help` and of `python -m engine evaluate` on the default scenario.

Prints the median wall and CPU time of N runs, each in a fresh interpreter, beside its goal (issue 19) and beside a
bare `python -c pass` measured in the same run (the interpreter's own start-up, which no change here can remove).
The store is built before the first timed run, so no run pays for building it.

    .venv/bin/python benchmarks/cli_startup.py [--runs 5]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.presets import DEFAULT_SCENARIO  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=5)
args = ap.parse_args()


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wall(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run in a fresh interpreter."""
    t0, c0 = time.perf_counter(), _children_cpu()
    subprocess.run([sys.executable, *argv], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0, _children_cpu() - c0


def median(argv: list[str]) -> tuple[float, float]:
    runs = [wall(argv) for _ in range(args.runs)]
    return statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)


with tempfile.TemporaryDirectory() as tmp:
    scenario = Path(tmp) / "scenario.json"
    scenario.write_text(json.dumps(DEFAULT_SCENARIO))
    wall(["-m", "engine", "evaluate", str(scenario)])  # builds the store if it is missing; not timed
    rows = [("python -c pass", ["-c", "pass"], None),
            ("python -m engine --help", ["-m", "engine", "--help"], 0.1),
            ("python -m engine evaluate (default scenario)", ["-m", "engine", "evaluate", str(scenario)], 0.3)]
    print(f"median of {args.runs} runs, each a fresh process: wall time, and CPU time (user + system), which a "
          "loaded machine inflates less")
    for label, argv, goal in rows:
        w, c = median(argv)
        print(f"{label:<46} wall {w:6.3f} s   CPU {c:6.3f} s" + (f"   goal: wall <= {goal:.1f} s" if goal else
                                                                  "   (reference)"))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
