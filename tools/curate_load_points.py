"""Curate data/seed/load_points.csv from seed_sources/triton_latency_breakdown.csv (called by curate_profiles.py).

Keeps the Triton online (concurrency-sweep) tables whose model is in models.csv and whose GPU is in the
catalogue; times stay in ms as published; precision comes from the backend section ('... with FP16').
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from profile_facts import DLE, SKUS, TRITON_LOAD, TRITON_LOAD_BATCH

_TIMES = {"client_send_ms": "client_send_ms", "network_ms": "network_server_sendrecv_ms",
          "server_queue_ms": "server_queue_ms", "compute_input_ms": "server_compute_input_ms",
          "compute_infer_ms": "server_compute_infer_ms", "compute_output_ms": "server_compute_output_ms",
          "client_recv_ms": "client_recv_ms", "p99_ms": "p99_ms", "avg_ms": "avg_ms"}


def load_points(src: Path) -> list[dict]:
    d = pd.read_csv(src / "triton_latency_breakdown.csv", keep_default_na=False, dtype=str)
    out = []
    for _, r in d.iterrows():
        if r.model not in TRITON_LOAD or r.gpu_norm not in SKUS:
            continue
        model, framework, note = TRITON_LOAD[r.model]
        prec = re.search(r"with (FP16|FP32|TF32|INT8|AMP)\b", r.backend_section)
        if prec is None:
            raise SystemExit(f"triton_latency_breakdown.csv: no precision in {r.backend_section!r}")
        if r.batch_size not in ("", str(TRITON_LOAD_BATCH)):
            raise SystemExit(f"triton_latency_breakdown.csv: unexpected batch {r.batch_size!r} for {r.model}")
        path, section = r.source_path_or_section.split(" :: ", 1)
        source = f"{DLE}@{r.source_commit[:7]} {path} :: {section.split(' > ')[-1]}"
        row = dict(source=source, model=model, sku=SKUS[r.gpu_norm], partition="full", precision=prec.group(1).lower(),
                   framework=framework, batch=TRITON_LOAD_BATCH, load_kind="concurrency", load=float(r.concurrency),
                   throughput=float(r.throughput_inf_per_s), p50_ms=None, p90_ms=None, p95_ms=None,
                   kind="published", measured_on="", note=note)
        row.update({k: float(r[c]) if r[c] != "" else None for k, c in _TIMES.items()})
        out.append(row)
    return sorted(out, key=lambda r: (r["model"], r["sku"], r["framework"], r["load"]))
