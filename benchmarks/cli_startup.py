"""CLI start-up: wall time of `python -m engine --help` and of `python -m engine evaluate` on the default scenario.

Prints the median wall and CPU time of N runs, each in a fresh interpreter, beside its goal (issue 19) and beside a
bare `python -c pass` measured in the same run (the interpreter's own start-up, which no change here can remove).
With `--base DIR` (another checkout, e.g. `git archive main | tar -x -C DIR`), the same commands run there too,
interleaved run by run with this checkout's so that both see the same load, and the ratio is printed. The store
is built before the first timed run in each checkout, so no run pays for building it.

With `--pycache` the runs may write and read `__pycache__` (PYTHONDONTWRITEBYTECODE unset for them, the caches
written by the untimed first run), as a checkout does after its first run; without it they inherit the
environment, and where that sets PYTHONDONTWRITEBYTECODE (this machine, the Docker image) and no earlier run left
`__pycache__` behind, every run compiles each engine module it imports from source (~0.2 s here).

    .venv/bin/python benchmarks/cli_startup.py [--runs 5] [--base DIR] [--pycache]
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
ap.add_argument("--base", type=Path, help="another checkout to time side by side (its own store is built first)")
ap.add_argument("--pycache", action="store_true", help="let the runs write and read __pycache__")
args = ap.parse_args()
ENV = {k: v for k, v in os.environ.items() if not (args.pycache and k == "PYTHONDONTWRITEBYTECODE")}
CHECKOUTS = [("this", ROOT)] + ([("base", args.base.resolve())] if args.base else [])


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wall(argv: list[str], cwd: Path = ROOT) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run in a fresh interpreter in the checkout `cwd`."""
    t0, c0 = time.perf_counter(), _children_cpu()
    subprocess.run([sys.executable, *argv], cwd=cwd, check=True, stdout=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - t0, _children_cpu() - c0


def medians(argv: list[str]) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) per checkout, the checkouts' runs interleaved."""
    runs: dict[str, list] = {name: [] for name, _ in CHECKOUTS}
    for _ in range(args.runs):
        for name, root in CHECKOUTS:
            runs[name].append(wall(argv, root))
    return {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for name, r in runs.items()}


with tempfile.TemporaryDirectory() as tmp:
    scenario = Path(tmp) / "scenario.json"
    scenario.write_text(json.dumps(DEFAULT_SCENARIO))
    for _, root in CHECKOUTS:  # builds each checkout's store if it is missing; not timed
        wall(["-m", "engine", "evaluate", str(scenario)], root)
    rows = [("python -c pass", ["-c", "pass"], None),
            ("python -m engine --help", ["-m", "engine", "--help"], 0.1),
            ("python -m engine evaluate (default scenario)", ["-m", "engine", "evaluate", str(scenario)], 0.3),
            ("python -m engine evaluate --json", ["-m", "engine", "evaluate", str(scenario), "--json"], 0.3)]
    print(f"median of {args.runs} runs, each a fresh process: wall time, and CPU time (user + system), which a "
          "loaded machine inflates less" + (f"; base: {args.base}" if args.base else "")
          + ("; __pycache__ " + ("written and read" if args.pycache or "PYTHONDONTWRITEBYTECODE" not in ENV else
                                 "not written (PYTHONDONTWRITEBYTECODE), read where an earlier run left it")))
    for label, argv, goal in rows:
        m = medians(argv)
        w, c = m["this"]
        line = f"{label:<46} wall {w:6.3f} s   CPU {c:6.3f} s"
        if args.base:
            bw, bc = m["base"]
            line += f"   | base wall {bw:6.3f} s   CPU {bc:6.3f} s   wall ratio {w / bw:5.2f}"
        print(line + (f"   goal: wall <= {goal:.1f} s" if goal else "   (reference)"))
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
