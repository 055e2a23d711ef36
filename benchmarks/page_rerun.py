"""Rerun time of every page of app.py under streamlit.testing.v1.AppTest: median and p95 (goal, issue 18: p95 <=
300 ms on every page).

The first run of each page (after the app's first run, on Design, built the store) is reported separately; the
reruns change one widget each time, as a person clicking through the page would. A page app.py lists without an
entry in PAGES below is named and fails the run, so a new page is never left out.

    .venv/bin/python benchmarks/page_rerun.py [--runs 20]
"""

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("KNEEPOINT_DB", str(Path(tempfile.mkdtemp()) / "k.duckdb"))

from streamlit.testing.v1 import AppTest  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--runs", type=int, default=20)
args = ap.parse_args()

GOAL_P95_MS = 300
# page file name -> (widget kind, key, values to cycle through; None: the widget's own options)
PAGES = {
    "design.py": ("number_input", "d_rate", [2000.0, 2500.0, 3000.0, 3500.0]),
    "compare.py": ("selectbox", "cmp_baseline", None),  # after loading the PREBA preset (SETUP)
    "search.py": ("number_input", "srch_confirm", [0, 1, 2]),
    "partitioning.py": ("selectbox", "par_show", ["paris", "gpu-max", "random"]),
    "preprocessing.py": ("number_input", "pp_cores", [16, 24, 32, 48]),
    "rpc.py": ("number_input", "rpc_rate", [1000.0, 2000.0, 3000.0]),
    "tenancy.py": ("number_input", "ten_batch", [4, 8, 16]),
    "cost.py": ("number_input", "cost_years", [1.0, 3.0, 5.0]),
    "profiles.py": ("toggle", "prof_loglat", [True, False]),
    "report.py": ("text_input", "rep_title", ["Review A", "Review B"]),
    "papers.py": ("selectbox", "pap_paper", ["eif", "splitrpc", "gpu-primitives"]),
}

SETUP = {"compare.py": "cmp_load"}  # a button pressed before timing, so the page has something to show

listed = re.findall(r'st\.Page\("([^"]+)"', (ROOT / "app.py").read_text())
if missing := [page for page in listed if Path(page).name not in PAGES]:
    sys.exit(f"no rerun widget declared for {', '.join(missing)}: add it to PAGES")

rows = []
for page in listed:
    kind, key, values = PAGES[Path(page).name]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()  # then the switch goes through app.py, as a browser does (before a first run AppTest takes the legacy pages/ route)
    t0 = time.perf_counter()
    at.switch_page(str(ROOT / page)).run()
    first = time.perf_counter() - t0
    if Path(page).name in SETUP:
        at.button(key=SETUP[Path(page).name]).click().run()
    if at.exception:
        sys.exit(f"{page}: {at.exception[0].message}")
    times = []
    values = values or getattr(at, kind)(key=key).options
    for i in range(args.runs):
        widget = getattr(at, kind)(key=key)
        t0 = time.perf_counter()
        widget.set_value(values[i % len(values)]).run()
        times.append(time.perf_counter() - t0)
    if at.exception:
        sys.exit(f"{page}: {at.exception[0].message}")
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    rows.append((page, first, statistics.median(times) * 1e3, p95 * 1e3, key))
    print(f"  {page}: done", file=sys.stderr)

print(f"{'page':26s} {'first run s':>11s} {'median ms':>9s} {'p95 ms':>7s}  widget changed")
for page, first, median, p95, key in rows:
    print(f"{page:26s} {first:11.2f} {median:9.1f} {p95:7.1f}  {key}{'' if p95 <= GOAL_P95_MS else '  (over the goal)'}")
print(f"goal: p95 <= {GOAL_P95_MS} ms per page; {args.runs} reruns each; worst p95 {max(r[3] for r in rows):.0f} ms "
      f"({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end)")
