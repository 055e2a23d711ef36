"""The SLA latency bound of a scenario: its own, else the model's MLPerf Server bound, else one default.

One home for the bound, so the analytic engine, the simulator and Batch_max (the batch a partition can best
use under the SLA, engine.analytic.gpu) read the same number.
"""

from __future__ import annotations

from engine.scenario import Scenario

#: MLPerf Inference Server-scenario p99 latency bounds (MLPerf Inference rules, "Benchmarks" table:
#: ResNet-50 15 ms, BERT 130 ms, RNN-T 1000 ms); other models default to 100 ms.
MLPERF_SERVER_P99_MS = {"resnet50": 15.0, "bert-base": 130.0, "bert-large": 130.0, "jasper": 1000.0,
                        "quartznet": 1000.0}
DEFAULT_SLA_MS = 100.0


def sla_of(scenario: Scenario) -> float:
    """The SLA latency bound in seconds: the scenario's, else the model's MLPerf Server bound."""
    ms = scenario.workload.sla.latency_ms
    if ms is None:
        ms = MLPERF_SERVER_P99_MS.get(scenario.model, DEFAULT_SLA_MS)
    return ms / 1e3
