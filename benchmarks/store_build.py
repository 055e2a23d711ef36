"""Time a cold build of the profile database from data/seed (goal: well under 5 s).

    .venv/bin/python benchmarks/store_build.py
"""

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.catalog import enumerate_layouts  # noqa: E402
from engine.store import Store, build_database  # noqa: E402

times = []
with tempfile.TemporaryDirectory() as d:
    for i in range(5):
        path = Path(d) / f"k{i}.duckdb"
        t = time.perf_counter()
        build_database(path)
        times.append(time.perf_counter() - t)
    t = time.perf_counter()
    store = Store(Path(d) / "k0.duckdb")
    open_s = time.perf_counter() - t
    counts = store.counts()
    cat = store.catalog()
print(f"cold build: median {statistics.median(times):.3f} s, max {max(times):.3f} s over {len(times)} builds")
print(f"open existing: {open_s * 1000:.1f} ms")
print("rows:", ", ".join(f"{k}={v}" for k, v in counts.items()))
for gpu in cat.gpus:
    if gpu.mig_capable:
        t = time.perf_counter()
        n = len(enumerate_layouts(gpu))
        print(f"{gpu.sku}: {n} maximal placed layouts ({(time.perf_counter() - t) * 1000:.1f} ms)")
