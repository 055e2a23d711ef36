"""Cross-GPU check: predict MLPerf single-accelerator Offline throughput on a GPU from others (issue 13).

MLPerf Inference (closed division, one accelerator) publishes Offline throughput for the same benchmark on
many GPUs. The estimator's saturated throughput (largest batch / latency over batches up to the memory
limit, at the benchmark's precision) is scaled by one factor per benchmark, the median of MLPerf / estimate
over the calibration GPUs (MLPerf's harness and kernels beat the DLE tables the roofline was fitted on), and
the factor times the target GPU's estimate is its prediction. The target GPU's own MLPerf rows are never
read for the prediction.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.order_stats import median

#: MLPerf benchmark -> (catalogue model, precision, input length): the closed division runs INT8 engines;
#: bert-99 is BERT-large on SQuAD at 384 tokens
BENCHMARKS = {"resnet50": ("resnet50", "int8", None), "bert-99": ("bert-large", "int8", 384.0)}
#: MLPerf's accelerator names -> the catalogue's SKUs
ACCELERATORS = {"NVIDIA A100-SXM-80GB": "A100-SXM4-80GB", "NVIDIA A30": "A30-24GB", "NVIDIA T4": "T4-16GB",
                "NVIDIA H100-SXM-80GB": "H100-SXM5-80GB", "NVIDIA H100-PCIe-80GB": "H100-PCIe-80GB"}
CALIBRATION_GPUS = ("A100-SXM4-80GB", "A30-24GB", "T4-16GB")
TARGET_GPUS = ("H100-SXM5-80GB", "H100-PCIe-80GB")


def mlperf_offline(rows: pd.DataFrame) -> pd.DataFrame:
    """Median Offline samples/s per (benchmark, SKU) over the valid rows of the MLPerf table."""
    r = rows[rows["scenario"].eq("Offline") & rows["benchmark"].isin(BENCHMARKS)
             & rows["accelerator_model"].isin(ACCELERATORS) & rows["result_valid"].eq("VALID")]
    r = r.assign(sku=r["accelerator_model"].map(ACCELERATORS))
    return r.groupby(["benchmark", "sku"], as_index=False)["result_value"].median()


def saturated_throughput(estimator, model: str, sku: str, precision: str, input_len) -> float:
    """Items/s at the best batch of the estimated curve (no harness: Offline keeps the GPU busy)."""
    e = estimator.estimate(model, sku, "full", precision, input_len=input_len,
                           batches=[1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], harness=None)
    return float(np.max(e.throughput))


def cross_gpu_table(estimator, rows: pd.DataFrame) -> pd.DataFrame:
    """Predicted vs published Offline throughput on each target GPU, per benchmark."""
    mlperf = mlperf_offline(rows)
    out = []
    for bench, (model, prec, length) in BENCHMARKS.items():
        have = mlperf[mlperf["benchmark"] == bench].set_index("sku")["result_value"]
        est = {s: saturated_throughput(estimator, model, s, prec, length) for s in CALIBRATION_GPUS + TARGET_GPUS}
        factors = [have[s] / est[s] for s in CALIBRATION_GPUS if s in have]
        k = median(factors) if factors else float("nan")  # no calibration GPU published: no scale to apply
        for s in TARGET_GPUS:
            if s in have:
                out.append(dict(benchmark=bench, sku=s, published=float(have[s]), predicted=k * est[s],
                                rel_error=k * est[s] / float(have[s]) - 1, scale=k,
                                raw_estimate=est[s], calibration_gpus=len(factors)))
    return pd.DataFrame(out)
