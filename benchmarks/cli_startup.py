"""CLI start-up: wall time of `python -m engine --help` and of `python -m engine evaluate` on the default scenario.

Prints the median of N runs, each in a fresh interpreter, beside its goal (issue 19) and beside a bare
`python -c pass` measured in the same run (the interpreter's own start-up, which no change here can remove).
The store is built before the first timed run, so no run pays for building it.

    .venv/bin/python benchmarks/cli_startup.py [--runs 5]
"""

import argparse
import json
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


def wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *argv], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def median(argv: list[str]) -> float:
    return statistics.median(wall(argv) for _ in range(args.runs))


with tempfile.TemporaryDirectory() as tmp:
    scenario = Path(tmp) / "scenario.json"
    scenario.write_text(json.dumps(DEFAULT_SCENARIO))
    wall(["-m", "engine", "evaluate", str(scenario)])  # builds the store if it is missing; not timed
    rows = [("python -c pass", ["-c", "pass"], None),
            ("python -m engine --help", ["-m", "engine", "--help"], 0.1),
            ("python -m engine evaluate (default scenario)", ["-m", "engine", "evaluate", str(scenario)], 0.3)]
    print(f"median wall time of {args.runs} runs, each a fresh process")
    for label, argv, goal in rows:
        print(f"{label:<46} {median(argv):6.3f} s" + (f"   goal <= {goal:.1f} s" if goal else "   (reference)"))
