"""Can an honest refit of the RPC components reach SplitRPC's out-of-sample results? Prints, for each prediction
the components set directly, its extreme over every component vector that meets all the asserted calibration
figures (engine.stages.rpc_fit_bounds), and every out-of-sample registry entry recomputed at that vector.

    python tools/rpc_fit_bounds.py [--starts N] [--seed S]      (a few minutes: each bound runs N+1 SLSQP searches)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.analytic import Context  # noqa: E402
from engine.reproduce.splitrpc import predictions_at  # noqa: E402
from engine.seed.papers import paper_results  # noqa: E402
from engine.stages.rpc_fit_bounds import bound  # noqa: E402
from engine.store import Store  # noqa: E402

#: (quantity, the direction that moves it towards the paper)
QUESTIONS = (("bert_reduction_pct", "max"), ("grpc_tax_resnet50_us", "min"), ("resnet18_vma_batch1_cap_rps", "max"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=4, help="seeded perturbed starts beside the tuned point")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    ctx = Context.from_store(Store())
    columns = {"tuned": predictions_at(ctx)}
    for quantity, sense in QUESTIONS:
        b = bound(quantity, sense, starts=args.starts, seed=args.seed)
        print(f"{sense} {quantity}: {b.value:.1f} (tuned {b.tuned:.1f}); every quantity there: "
              + ", ".join(f"{k} {v:.1f}" for k, v in b.quantities.items()))
        print(f"  figures at the edge of their tolerance: {', '.join(b.tightest)}")
        print("  point: " + ", ".join(f"{k}={v:.3g}" for k, v in b.point.items()))
        columns[f"{sense} {quantity.split('_')[0]}"] = predictions_at(ctx, b.point)
    print()
    results = paper_results()
    heads = list(columns)
    print(f"{'entry':28s} {'paper':>7s} " + " ".join(f"{h:>16s}" for h in heads))
    for key in columns["tuned"]:
        print(f"{key:28s} {results[key].value:7g} " + " ".join(f"{columns[h][key]:16.3g}" for h in heads))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
