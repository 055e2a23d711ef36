"""Cached engine calls and small shared widgets for deploying a design: the deployment zip (Design and Report
pages) and the sizing panel's answer (Search page)."""

from __future__ import annotations

from typing import Optional

import pandas as pd
import streamlit as st

from engine.deploy.export import export_design, zip_bytes
from engine.deploy.sizing import size
from engine.errors import KneepointError
from ui.compute import engine_call
from ui.design_state import context
from ui.text import md


@engine_call(entries=32)
def _deployment_zip(scenario_json: str, servers: int) -> tuple[Optional[bytes], str]:
    """(the zip, a one-line summary) or (None, the reason the design cannot be exported)."""
    try:
        export = export_design(scenario_json, context(), servers=servers)
    except KneepointError as e:
        return None, str(e)
    plan = export.plan
    return zip_bytes(export), (f"{len(export.files)} files: {len(plan.configs)} mig-parted config(s), "
                               f"{len(plan.profiles)} Triton repositories and Deployments with autoscalers")


def deployment_download(scenario_json: str, key: str, name: str, where=st, servers: int = 1) -> None:
    """A download button for the design's deployment zip (on `servers` identical servers), or the reason there
    is none."""
    data, text = _deployment_zip(scenario_json, servers)
    stem = "".join(ch if ch.isalnum() else "-" for ch in name).strip("-").lower() or "design"
    if data is None:
        where.caption(f"No deployment files for {md(repr(name))}: {md(text)}")
        return
    where.download_button(f"Deployment files of {name!r} (zip)", data=data, file_name=f"{stem}-deploy.zip",
                          mime="application/zip", key=key, on_click="ignore",
                          help=f"mig-parted, Triton model repository, Kubernetes Deployment + HPA; {text}")


@engine_call(progress="sizing...", kind="size")
def size_cached(scenario_json: str, rate: float, skus: tuple[str, ...], *, progress=None):
    """The sizing answer (engine.deploy.sizing.size), the winner simulated; computed once per inputs and data
    version for every session, with a progress bar while it runs."""
    return size(scenario_json, context(), rate, list(skus), progress=progress)


def sizing_table(result) -> pd.DataFrame:
    """One row per GPU type, ranked, with units in the column names."""
    rows = []
    for a in result.answers:
        ok = a.status == "ok"
        rows.append({"GPU type": a.sku, "answer": a.status if not ok else "ok",
                     "GPUs": a.gpus if ok else None, "servers": a.servers if ok else None,
                     "per-GPU layout": a.layout_label if ok else a.reason,
                     "host cores per server": a.host_cores if ok else None,
                     "DPU units per server": a.dpu_units if ok else None,
                     f"p{result.percentile:g} at rate (ms)": a.latency_at_rate_ms if ok else None,
                     "SLA-bounded (req/s)": a.sla_bounded_rps if ok else None,
                     "TCO (USD)": a.tco_usd if ok else None, "bottleneck": a.bottleneck if ok else "",
                     "service times": ", ".join(a.curves)})
    return pd.DataFrame(rows)
