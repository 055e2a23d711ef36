"""CLI start-up: wall time of `python -m engine --help` and of `python -m engine evaluate` on the default scenario.

Prints the median wall and CPU time of N runs, each in a fresh interpreter, beside its goal (issue 19) and beside a
bare `python -c pass` measured in the same run (the interpreter's own start-up, which no change here can remove).
With `--base DIR` (another checkout, e.g. `git archive main | tar -x -C DIR`), the same commands run there too,
interleaved run by run with this checkout's so that both see the same load, and the ratio is printed. The store
is built before the first timed run in each checkout, so no run pays for building it.

That untimed first run also leaves the store's rows snapshot (engine.store.snapshot), so the `evaluate` rows time
the warm path: the rows read from the snapshot, DuckDB never imported. The benchmark says whether the snapshot was
current before the runs and untouched after them (a rewritten one means some run read the store instead). The row
`evaluate, cold` deletes the snapshot before each run (untimed), so it times what a first run after an import or a
seed change costs: the store opened and queried through DuckDB, and the snapshot written. A base without the
snapshot runs the store path in every row.

With `--pycache` the runs may write and read `__pycache__` (PYTHONDONTWRITEBYTECODE unset for them, the caches
written by the untimed first run), as a checkout does after its first run; without it they inherit the
environment, and where that sets PYTHONDONTWRITEBYTECODE (this machine, the Docker image) and no earlier run left
`__pycache__` behind, every run compiles each engine module it imports from source (~0.1 s here).

With `--importtime`, it also prints where evaluate's import time goes: the self time (`python -X importtime`) summed
per top-level package (engine's own modules apart), median over the runs, beside the base's.

    .venv/bin/python benchmarks/cli_startup.py [--runs 5] [--base DIR] [--pycache] [--importtime]
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
from engine.store import resolve_db_path  # noqa: E402
from engine.store.snapshot import load_snapshot, snapshot_path  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--base", type=Path, help="another checkout to time side by side (its own store is built first)")
ap.add_argument("--pycache", action="store_true", help="let the runs write and read __pycache__")
ap.add_argument("--importtime", action="store_true", help="also break evaluate's import time down by package")
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


def medians(argv: list[str], before=None) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) per checkout, the checkouts' runs interleaved; `before(checkout)` runs, untimed, before
    each run."""
    runs: dict[str, list] = {name: [] for name, _ in CHECKOUTS}
    for _ in range(args.runs):
        for name, root in CHECKOUTS:
            if before:
                before(root)
            runs[name].append(wall(argv, root))
    return {name: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for name, r in runs.items()}


TOP_PACKAGES = 16  # packages listed by name in the import breakdown, the largest first


def import_seconds(argv: list[str], cwd: Path) -> dict[str, float]:
    """Self import time (s) per top-level package of one run under -X importtime; engine.<package> apart."""
    r = subprocess.run([sys.executable, "-X", "importtime", *argv], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, env=ENV)
    out: dict[str, float] = {}
    for line in r.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        self_us, _, name = (part.strip() for part in line[len("import time:"):].split("|"))
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] == "engine" and len(parts) > 1 else parts[0]
        out[key] = out.get(key, 0.0) + int(self_us) / 1e6
    return out


def import_table(argv: list[str]) -> None:
    runs: dict[str, list] = {name: [] for name, _ in CHECKOUTS}
    for _ in range(args.runs):
        for name, root in CHECKOUTS:
            runs[name].append(import_seconds(argv, root))
    table = {name: {k: statistics.median(r.get(k, 0.0) for r in rs) for k in set().union(*rs)}
             for name, rs in runs.items()}
    keys = sorted(set().union(*table.values()), key=lambda k: -max(t.get(k, 0.0) for t in table.values()))
    total = {name: sum(t.values()) for name, t in table.items()}
    print(f"import time of evaluate by package (self time summed, median of {args.runs} runs, s):")
    print(f"  {'package':<28} {'this':>7}" + (f" {'base':>7}" if args.base else ""))
    shown, rest = keys[:TOP_PACKAGES], keys[TOP_PACKAGES:]
    for k in shown:
        print(f"  {k:<28} {table['this'].get(k, 0.0):7.3f}" + (f" {table['base'].get(k, 0.0):7.3f}" if args.base
                                                                else ""))
    if rest:
        print(f"  {'the other ' + str(len(rest)):<28} {sum(table['this'].get(k, 0.0) for k in rest):7.3f}"
              + (f" {sum(table['base'].get(k, 0.0) for k in rest):7.3f}" if args.base else ""))
    print(f"  {'all imports':<28} {total['this']:7.3f}" + (f" {total['base']:7.3f}" if args.base else ""))


def report(label: str, m: dict[str, tuple[float, float]], tail: str) -> None:
    w, c = m["this"]
    line = f"{label:<46} wall {w:6.3f} s   CPU {c:6.3f} s"
    if args.base:
        bw, bc = m["base"]
        line += f"   | base wall {bw:6.3f} s   CPU {bc:6.3f} s   wall ratio {w / bw:5.2f}"
    print(line + tail)


def rows_snapshot(root: Path) -> Path:
    """Where a checkout's `evaluate` keeps its rows snapshot (beside its database: $KNEEPOINT_DB, else its data/)."""
    return snapshot_path(resolve_db_path(root / "data"))


def drop_rows_snapshot(root: Path) -> None:
    rows_snapshot(root).unlink(missing_ok=True)


def snapshot_stamp() -> tuple:
    """This checkout's rows snapshot's inode and modification time (None: there is none)."""
    try:
        s = os.stat(rows_snapshot(ROOT))
    except FileNotFoundError:
        return None
    return s.st_ino, s.st_mtime_ns


with tempfile.TemporaryDirectory() as tmp:
    scenario = Path(tmp) / "scenario.json"
    scenario.write_text(json.dumps(DEFAULT_SCENARIO))
    for _, root in CHECKOUTS:  # builds each checkout's store if it is missing; not timed
        wall(["-m", "engine", "evaluate", str(scenario)], root)
    current = load_snapshot(resolve_db_path(ROOT / "data")) is not None
    stamp = snapshot_stamp()
    rows = [("python -c pass", ["-c", "pass"], None),
            ("python -m engine --help", ["-m", "engine", "--help"], 0.1),
            ("python -m engine evaluate (default scenario)", ["-m", "engine", "evaluate", str(scenario)], 0.3),
            ("python -m engine evaluate --json", ["-m", "engine", "evaluate", str(scenario), "--json"], 0.3)]
    print(f"median of {args.runs} runs, each a fresh process: wall time, and CPU time (user + system), which a "
          "loaded machine inflates less" + (f"; base: {args.base}" if args.base else "")
          + ("; __pycache__ " + ("written and read" if args.pycache or "PYTHONDONTWRITEBYTECODE" not in ENV else
                                 "not written (PYTHONDONTWRITEBYTECODE), read where an earlier run left it")))
    print(f"rows snapshot of this checkout ({rows_snapshot(ROOT)}): "
          + ("current before the evaluate runs" if current else "NOT current: the evaluate rows time the store path"))
    for label, argv, goal in rows:
        report(label, medians(argv), f"   goal: wall <= {goal:.1f} s" if goal else "   (reference)")
    warm_untouched = snapshot_stamp() == stamp
    print("  the warm runs " + ("read it and left it as it was" if current and warm_untouched else
                                "REWROTE it: some read the store instead"))
    report("python -m engine evaluate --json, cold",
           medians(["-m", "engine", "evaluate", str(scenario), "--json"], drop_rows_snapshot),
           "   (no rows snapshot: the store read, the snapshot written)")
    if args.importtime:
        import_table(["-m", "engine", "evaluate", str(scenario), "--json"])
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
