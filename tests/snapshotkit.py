"""What the tests of the rows snapshot (engine.store.snapshot) share: their scenarios and their ways of reading and
rewriting a snapshot. Their database, one built per module and copied for each test, is the `snapshot_db` fixture
of tests/conftest.py."""

from __future__ import annotations

import hashlib
import json

from engine.analytic import Context, build_design, evaluate_design
from engine.cli.evaluate import _clean
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.seed.records import LatencyPointRow
from engine.store.snapshot import LATENCY, SNAPSHOT_TABLES, snapshot_path

DPU = dict(DEFAULT_SCENARIO, preprocessing={"device": "dpu"})
MY_NET = dict(DEFAULT_SCENARIO, model="my-net", precision="fp16",
              gpu={"sku": "T4-16GB", "count": 2, "layout": None})
#: a model with operator costs and no latency point on any GPU: only the estimator answers it
ESTIMATED = dict(DEFAULT_SCENARIO, model="swin-t", gpu={"sku": "A100-SXM4-80GB", "count": 1, "layout": None},
                 preprocessing={"device": "none"},
                 workload={"arrival": {"kind": "poisson", "rate_rps": 200},
                           "sla": {"latency_ms": 50, "percentile": 99}})


def all_rows(rows) -> dict:
    """Everything Context.from_store and ProfileBook.from_store read, from a Store or a snapshot."""
    out = {name: rows.records(name) for name in SNAPSHOT_TABLES}
    out[LATENCY] = rows.latency_records()
    out["catalog"] = rows.catalog().model_dump_json()
    out["cost_models"] = rows.cost_models()
    return out


def evaluation(rows, scenario: dict) -> str:
    """The evaluation of `scenario` as `evaluate --json` prints it."""
    ctx = Context.from_store(rows)
    design = build_design(load_scenario(scenario, ctx.book), ctx)
    return json.dumps(_clean(evaluate_design(design, ctx).model_dump()), indent=1)


def my_net_rows() -> list[LatencyPointRow]:
    return [LatencyPointRow(source="my profiler run", model="my-net", sku="T4-16GB", partition="full",
                            precision="fp16", framework="tensorrt", batch=b, mean_ms=1.0 + b,
                            throughput=b / (1.0 + b) * 1e3, kind="measured", measured_on="2026-11-27 test host")
            for b in (1, 2, 4, 8)]


def rewrite(db, body: bytes, header: dict | None = None) -> None:
    """Replace the snapshot's body, with a header that vouches for it (its digest recomputed)."""
    path = snapshot_path(db)
    head = json.loads(path.read_bytes().partition(b"\n")[0]) if header is None else header
    head["sha256"] = hashlib.sha256(body).hexdigest()
    path.write_bytes(json.dumps(head).encode() + b"\n" + body)
