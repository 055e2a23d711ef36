"""Named starting scenarios (the Design page's default, and the seeds' headline comparisons)."""

from __future__ import annotations

#: The question a new user arrives with: ResNet-50 on an A100 at 3,000 requests/s, 15 ms p99 (MLPerf Server). It has
#: no name: its name is derived from the design (Scenario.derived_name) until someone types one.
DEFAULT_SCENARIO: dict = {
    "model": "resnet50",
    "gpu": {"sku": "A100-SXM4-80GB", "count": 1, "layout": ["1g.10gb"] * 7},
    "host": {"cpu_cores": 32, "cpu_reserved_cores": 2},
    "preprocessing": {"device": "cpu"},
    "rpc": {"preset": "grpc"},
    "batching": {"policy": "preba"},
    "scheduler": {"policy": "fifs"},
    "workload": {"arrival": {"kind": "poisson", "rate_rps": 3000}, "sla": {"latency_ms": 15, "percentile": 99}},
}
