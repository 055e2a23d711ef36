"""p95 rerun time of each page under streamlit.testing.v1.AppTest (goal: well under a second for analytic pages).

The first run of each page (building the store and the engine's caches) is reported separately; the
reruns change one widget each time, as a person clicking through the page would.

    .venv/bin/python benchmarks/page_rerun.py [--runs 20]
"""

import argparse
import os
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

# page -> (widget kind, key, values to cycle through)
PAGES = {
    "pages/design.py": ("number_input", "d_rate", [2000.0, 2500.0, 3000.0, 3500.0]),
    "pages/compare.py": ("selectbox", "cmp_baseline", [0, 1, 2]),  # after loading the PREBA preset (SETUP)
    "pages/search.py": ("number_input", "srch_confirm", [0, 1, 2]),
    "pages/partitioning.py": ("selectbox", "par_show", ["paris", "gpu-max", "random"]),
    "pages/preprocessing.py": ("number_input", "pp_cores", [16, 24, 32, 48]),
    "pages/rpc.py": ("number_input", "rpc_rate", [1000.0, 2000.0, 3000.0]),
    "pages/tenancy.py": ("number_input", "ten_batch", [4, 8, 16]),
    "pages/cost.py": ("number_input", "cost_years", [1.0, 3.0, 5.0]),
    "pages/profiles.py": ("toggle", "prof_loglat", [True, False]),
    "pages/report.py": ("text_input", "rep_title", ["Review A", "Review B"]),
}

SETUP = {"pages/compare.py": "cmp_load"}  # a button pressed before timing, so the page has something to show

for page, (kind, key, values) in PAGES.items():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    t0 = time.perf_counter()
    at.switch_page(str(ROOT / page)).run()
    first = time.perf_counter() - t0
    if page in SETUP:
        at.button(key=SETUP[page]).click().run()
    if at.exception:
        sys.exit(f"{page}: {at.exception[0].message}")
    times = []
    for i in range(args.runs):
        widget = getattr(at, kind)(key=key)
        t0 = time.perf_counter()
        widget.set_value(values[i % len(values)]).run()
        times.append(time.perf_counter() - t0)
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    print(f"{page:22s} first run {first:6.2f} s   rerun median {statistics.median(times) * 1e3:7.1f} ms   "
          f"p95 {p95 * 1e3:7.1f} ms   ({args.runs} reruns changing {key})")
