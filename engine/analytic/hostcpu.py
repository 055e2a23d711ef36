"""PREBA's view of the host CPU: cores needed to keep the GPU partitions fed (PREBA section 3.3, Figure 8)."""

from __future__ import annotations

from engine.analytic.pipeline import Context, build_design
from engine.scenario import Scenario
from engine.stages.preprocess import cores_needed_curve, cpu_cost_per_item_s
from engine.vocab import PreprocessDevice


def cores_needed_by_partitions(scenario: Scenario, ctx: Context) -> list[dict[str, float]]:
    """CPU cores that preprocessing (and the RPC path) need as 1, 2, ... partitions run at their Batch_max.

    Each active partition adds the items/s it sustains at Batch_max; preprocessing on the CPU costs the
    pipeline's per-item CPU time (measured rows first) and the RPC path its host CPU per request.
    Returns one row per count of active partitions, with the cores available for serving.
    """
    cpu_scenario = scenario.model_copy(update={"preprocessing": scenario.preprocessing.model_copy(
        update={"device": PreprocessDevice.CPU, "cores": None})})
    design = build_design(cpu_scenario, ctx)
    model = ctx.book.models.loc[scenario.model] if scenario.model in ctx.book.models.index else None
    pipeline = str(model["preprocess"]) if model is not None else "none"
    if pipeline in ("image", "audio"):
        cost = cpu_cost_per_item_s(ctx.preprocessing_points, pipeline, scenario.preprocessing.image_megapixels,
                                   design.gpu.input_len if pipeline == "audio" else None)[0]
    else:
        cost = 0.0
    per_part = [p.max_batch / p.service(p.max_batch) for p in design.gpu.partitions]
    rpc_cpu = next((s.host_cpu_s - s.breakdown_s.get("preprocess_cpu", 0.0) for s in design.host_stages
                    if s.name in ("host_cpu", "rpc")), 0.0)
    free = scenario.host.cpu_cores - scenario.host.cpu_reserved_cores
    rows = []
    for (n, pre_cores), items in zip(cores_needed_curve(per_part, cost) if cost else
                                     [(k + 1, 0.0) for k in range(len(per_part))],
                                     [sum(per_part[:k + 1]) for k in range(len(per_part))]):
        rpc_cores = items / design.q_mean * rpc_cpu
        rows.append({"active_partitions": n, "gpu_items_per_s": items, "preprocessing_cores": pre_cores,
                     "rpc_cores": rpc_cores, "total_cores": pre_cores + rpc_cores, "available_cores": float(free),
                     "cpu_ms_per_item": cost * 1e3})
    return rows
