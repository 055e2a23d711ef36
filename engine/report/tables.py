"""A report's result tables, as written to CSV and Parquet (one file per table, same columns in both).

Every table is long ("tidy"): one row per design and item, the design named in `scenario` (names are
unique within a report). Times are ms, rates requests/s, money USD. An unstable design's latencies are
inf. CSV: UTF-8, header row, empty cell = no value. The columns, in order:

- designs: scenario, model, hardware, rate_rps, stable, unstable_reason, capacity_rps, bottleneck,
  sla_percentile, sla_latency_ms, latency_at_rate_ms, sla_met, sla_bounded_rps, mean_ms, p50_ms,
  p95_ms, p99_ms, tco_usd, queries_per_usd, queries_per_joule
  (headline metrics; latency_at_rate_ms is the SLA-percentile latency at the offered load rate_rps)
- inputs: scenario, field, value
  (every scenario field as a dotted path, e.g. gpu.layout or workload.arrival.rate_rps; value is JSON)
- load_curve: scenario, rate_rps, mean_ms, tail_ms, percentile
  (analytic latency against offered load up to capacity; tail_ms at the SLA percentile)
- breakdown: scenario, component, mean_ms
  (mean time per request in each component)
- utilization: scenario, resource, utilization
  (offered load over capacity per stage; busy fraction per partition 'gpu:<label>')
- partitions: scenario, label, partition, provenance, batch_max, knee_batch, time_knee_ms, batch,
  service_ms, utilization
  (every GPU instance: Batch_max, the knee, the mean batch at the offered load and its service time)
- host_cpu: scenario, consumer, cores
  (host CPU cores used per consumer, and the used, free-for-serving and reserved totals)
- cost: scenario, item, value, unit
  (CAPEX by item, OPEX, TCO, queries per USD and per joule, wall power, over cost.years)
- provenance: scenario, partition, instances, profile_kind, series, reference, sm_ratio,
  fit_rms_rel_error, cross_gpu, batch, input_len, point_kind, mean_ms, source, measured_on
  (one row per stored latency point behind each partition's profile: its own points when measured or
  published, the reference series' points when derived, with the slice-law SM ratio and fit error)
- notes: scenario, note
"""

from __future__ import annotations

import io
import json

import pandas as pd

from engine.io.exporters import frame_csv_bytes
from engine.naming import profile_counts
from engine.report.build import DesignResult, Report
from engine.results import CostSummary

TABLE_NAMES = ("designs", "inputs", "load_curve", "breakdown", "utilization", "partitions", "host_cpu", "cost",
               "provenance", "notes")


def hardware(scenario) -> str:
    """The accelerators in a few words ('1 x A100-SXM4-80GB: 1g.10gb x 7'); tolerates a GPU-less backend."""
    gpu = getattr(scenario, "gpu", None)
    if gpu is None:
        other = next((getattr(scenario, n) for n in ("fpga",) if getattr(scenario, n, None) is not None), None)
        if other is None:
            return "no accelerator"
        d = other.model_dump(mode="json")
        return "FPGA " + ", ".join(f"{k}={v}" for k, v in d.items() if v is not None and not isinstance(v, (dict, list)))
    if gpu.shares:
        part = "GPU% " + " + ".join(f"{s:g}" for s in gpu.shares)
    elif gpu.layouts:
        part = "; ".join(" + ".join(l) for l in gpu.layouts)
    elif gpu.layout:
        part = profile_counts(gpu.layout)
    else:
        part = "whole GPU"
    return f"{gpu.count} x {gpu.sku}: {part}"


def _flatten(data, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(data, dict) and data:
        out = []
        for k, v in data.items():
            out += _flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    return [(prefix, json.dumps(data))]


def _design_row(d: DesignResult) -> dict:
    ev, sc = d.evaluation, d.scenario
    lat, cost = ev.latency_ms, ev.cost
    return {"scenario": sc.name, "model": sc.model, "hardware": hardware(sc), "rate_rps": ev.rate_rps,
            "stable": ev.stable, "unstable_reason": ev.unstable_reason, "capacity_rps": ev.capacity_rps,
            "bottleneck": ev.bottleneck, "sla_percentile": ev.sla.percentile,
            "sla_latency_ms": ev.sla.latency_ms, "latency_at_rate_ms": ev.sla.latency_at_rate_ms,
            "sla_met": ev.sla.met, "sla_bounded_rps": ev.sla_bounded_rps, "mean_ms": lat.mean,
            "p50_ms": lat.p50, "p95_ms": lat.p95, "p99_ms": lat.p99,
            "tco_usd": cost.tco_usd, "queries_per_usd": cost.queries_per_usd,
            "queries_per_joule": cost.queries_per_joule}


def _cost_rows(name: str, cost: CostSummary) -> list[dict]:
    """One row per cost item: the totals and efficiencies by field name, then CAPEX per item as 'capex:<item>'."""
    rows = [{"scenario": name, "item": field, "value": getattr(cost, field), "unit": CostSummary.UNITS[field]}
            for field in CostSummary.model_fields if field != "capex_breakdown_usd"]
    return rows + [{"scenario": name, "item": f"capex:{item}", "value": value,
                    "unit": CostSummary.UNITS["capex_breakdown_usd"]}
                   for item, value in cost.capex_breakdown_usd.items()]


def _frame(rows: list[dict], table: str) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS[table])


COLUMNS = {
    "designs": ["scenario", "model", "hardware", "rate_rps", "stable", "unstable_reason", "capacity_rps",
                "bottleneck", "sla_percentile", "sla_latency_ms", "latency_at_rate_ms", "sla_met", "sla_bounded_rps",
                "mean_ms", "p50_ms", "p95_ms", "p99_ms", "tco_usd", "queries_per_usd", "queries_per_joule"],
    "inputs": ["scenario", "field", "value"],
    "load_curve": ["scenario", "rate_rps", "mean_ms", "tail_ms", "percentile"],
    "breakdown": ["scenario", "component", "mean_ms"],
    "utilization": ["scenario", "resource", "utilization"],
    "partitions": ["scenario", "label", "partition", "provenance", "batch_max", "knee_batch", "time_knee_ms", "batch",
                   "service_ms", "utilization"],
    "host_cpu": ["scenario", "consumer", "cores"],
    "cost": ["scenario", "item", "value", "unit"],
    "provenance": ["scenario", "partition", "instances", "profile_kind", "series", "reference", "sm_ratio",
                   "fit_rms_rel_error", "cross_gpu", "batch", "input_len", "point_kind", "mean_ms", "source",
                   "measured_on"],
    "notes": ["scenario", "note"],
}


def report_tables(report: Report) -> dict[str, pd.DataFrame]:
    """Every table of the module docstring, in TABLE_NAMES order."""
    rows: dict[str, list[dict]] = {t: [] for t in TABLE_NAMES}
    for d in report.designs:
        name, ev = d.scenario.name, d.evaluation
        rows["designs"].append(_design_row(d))
        rows["inputs"] += [{"scenario": name, "field": f, "value": v}
                           for f, v in _flatten(d.scenario.model_dump(mode="json", by_alias=True))]
        rows["load_curve"] += [{"scenario": name, "rate_rps": r, "mean_ms": m, "tail_ms": t,
                                "percentile": d.curve.percentile}
                               for r, m, t in zip(d.curve.rates_rps, d.curve.mean_ms, d.curve.tail_ms)]
        rows["breakdown"] += [{"scenario": name, "component": k, "mean_ms": v} for k, v in ev.breakdown_ms.items()]
        rows["utilization"] += [{"scenario": name, "resource": k, "utilization": v} for k, v in ev.utilization.items()]
        rows["partitions"] += [{"scenario": name, **{column: getattr(part, column)
                                                     for column in COLUMNS["partitions"][1:]}}
                               for part in ev.partitions]
        rows["host_cpu"] += [{"scenario": name, "consumer": consumer, "cores": cores}
                             for consumer, cores in ev.host_cpu.rows()]
        rows["cost"] += _cost_rows(name, ev.cost)
        for u in d.profiles:
            head = {"scenario": name, "partition": u.partition, "instances": u.instances,
                    "profile_kind": u.provenance, "series": u.series, "reference": u.reference,
                    "sm_ratio": u.sm_ratio, "fit_rms_rel_error": u.fit_rms_rel_error, "cross_gpu": u.cross_gpu}
            rows["provenance"] += [{**head, "batch": p.batch, "input_len": p.input_len, "point_kind": p.kind,
                                    "mean_ms": p.mean_ms, "source": p.source, "measured_on": p.measured_on}
                                   for p in u.points]
        rows["notes"] += [{"scenario": name, "note": n} for n in ev.notes]
    return {t: _frame(rows[t], t) for t in TABLE_NAMES}


#: the "Seed papers" section's table (engine.report.build.PapersSection): row field -> header
PAPERS_COLUMNS = {"id": "id", "paper": "paper", "where": "where", "quantity": "result", "paper_value": "paper value",
                  "kneepoint": "Kneepoint", "unit": "unit", "rel_error": "error (%)", "within": "within the bar",
                  "sample": "sample", "status": "status", "mechanism": "mechanism / reason"}


def papers_frame(rows) -> pd.DataFrame:
    """The reproduction rows (engine.reproduce.runner.ReproductionRow) as the report's table, one row each in the
    registry's order; the error in percent, blank where there is no value."""
    out = [[(100 * r.rel_error if r.rel_error is not None else None) if field == "rel_error" else getattr(r, field)
            for field in PAPERS_COLUMNS] for r in rows]
    return pd.DataFrame(out, columns=list(PAPERS_COLUMNS.values()))


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """UTF-8 CSV with a header; floats in their shortest round-tripping form, inf as 'inf'; text that a spreadsheet
    would run as a formula (a design's name, a note) behind a single quote (engine.io.exporters.frame_csv_bytes)."""
    return frame_csv_bytes(frame)


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()
