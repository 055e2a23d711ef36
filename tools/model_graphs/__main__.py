"""`python -m tools.model_graphs`: rewrite data/seed/model_costs.csv and print each model's totals."""

from __future__ import annotations

from collections import defaultdict

from tools.model_graphs.build import OUT, build_rows, render_csv


def main() -> None:
    rows = build_rows()
    OUT.write_text(render_csv(rows))
    totals = defaultdict(lambda: [0, 0.0, 0.0])
    for r in rows:
        t = totals[r["model"]]
        t[0] += 1
        t[1] += r["weight_elems"]
        t[2] += r["flops"] if r["op_class"] != "memory" else 0.0
    for model, (n, w, f) in sorted(totals.items()):
        print(f"{model:18s} {n:4d} ops  {w / 1e6:9.4f} M params  {f / 2e9:9.4f} GMAC at the reference input")
    print(f"wrote {len(rows)} rows to {OUT}")


if __name__ == "__main__":
    main()
