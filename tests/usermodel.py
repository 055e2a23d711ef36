"""A user's model measured on one GPU only: it has no operator costs, so the estimator cannot price it anywhere
else. Every catalogue model has an (estimated) answer on every GPU, so this is what an unanswerable design is."""

from engine.io.exporters import csv_bytes
from engine.io.importers import import_file
from engine.seed.records import LatencyPointRow

MODEL, MEASURED_ON = "my-detector", "V100-16GB"


def import_measured_on_one_gpu(store) -> str:
    """Import MODEL's latency curve (batch 1-16, on MEASURED_ON) into `store` as user rows; returns MODEL."""
    rows = [LatencyPointRow(model=MODEL, sku=MEASURED_ON, partition="full", precision="fp16", framework="trt",
                            batch=b, mean_ms=1.0 + 0.5 * b, throughput=b / (1.0 + 0.5 * b) * 1e3, kind="measured",
                            source="bench run") for b in (1, 2, 4, 8, 16)]
    import_file(store, csv_bytes(rows, LatencyPointRow), name="latency_points.csv")
    return MODEL
