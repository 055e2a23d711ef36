"""What a design deploys as: placed per-GPU MIG layouts grouped into mig-parted configurations, and per MIG
profile the replicas, Triton batching parameters and SLA-bounded throughput per replica.

Every number comes from the analytic engine: Batch_max per partition and Time_queue from the design's GPU
side (PREBA knee-derived or the scenario's own), the SLA-bounded throughput of the whole design
(engine.analytic.operating_point.sla_bounded_rate) split over the partitions in proportion to their capacity at
Batch_max (how first-idle, ELSA and join-shortest-queue spread the load; round-robin splits it evenly), and the
host cores the RPC path and preprocessing use at the design's rate.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.analytic import Context, build_design
from engine.analytic.operating_point import sla_bounded_rate
from engine.catalog import Gpu, MigLayout
from engine.cost import GPUS_PER_SERVER
from engine.deploy.sizing import MAX_GPUS
from engine.errors import KneepointError
from engine.partition.pack import pack, PackingError
from engine.scenario import Scenario, load_scenario, require_gpu
from engine.policy_rules import rule_for, scheduler_rule_for

#: the HorizontalPodAutoscaler aims each replica at this fraction of its SLA-bounded throughput, so a replica
#: scales out before the tail reaches the SLA (the analytic tail grows steeply in the last 20 % before it)
HPA_HEADROOM = 0.8
#: most identical servers one export spans (as many as the contract allows GPUs: one GPU per server)
MAX_SERVERS = MAX_GPUS
#: longest Kubernetes object name and label value (RFC 1123 label / label-value limits)
MAX_K8S_NAME = 63
WHOLE_GPU = "full"


class ExportError(KneepointError):
    """A design that cannot be exported as asked; the message names the reason (an instance, a field)."""


class ProfilePlan(BaseModel):
    """One MIG profile (or the whole GPU) of the design as Kubernetes replicas and a Triton configuration."""

    model_config = ConfigDict(frozen=True)

    profile: str  # MIG profile name, or 'full' for a whole GPU
    slug: str  # the profile in Kubernetes names: '1g.10gb+me' -> '1g-10gb-me'
    replicas: int  # instances of this profile in the design (one Triton pod each)
    batch_max: int  # Triton max_batch_size and preferred_batch_size (items)
    time_queue_us: int  # Triton max_queue_delay_microseconds
    sla_rps_per_replica: float  # SLA-bounded throughput one replica carries (requests/s)
    offered_rps: float  # the design's offered rate that lands on this profile (requests/s)
    min_replicas: int  # replicas the offered rate needs at HPA_HEADROOM
    cpu_cores_per_replica: float  # host cores (RPC path, preprocessing) per replica at the offered rate
    resource: str  # 'nvidia.com/mig-1g.10gb' or 'nvidia.com/gpu'


class MigConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # mig-parted config name and the node label value that selects it
    devices: dict[str, int]  # {profile: count} on every GPU of a node with this config; {} = MIG off
    gpus: int  # GPUs of the design with this layout
    nodes: int  # nodes to label (GPUS_PER_SERVER GPUs each)
    placed: list[str]  # one valid placement ('3g.40gb@0', ...) re-derived by the packer


class DeployPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    model: str
    model_slug: str
    sku: str
    mig_capable: bool
    gpus: int  # in all
    servers: int  # identical servers, each the scenario's design
    rate_rps: float  # offered, all servers together
    sla_ms: float
    sla_percentile: float
    sla_bounded_rps: float
    batching: str
    preprocessing: str
    configs: list[MigConfig]
    profiles: list[ProfilePlan]


def slug(text: str) -> str:
    """`text` as an RFC 1123 label: lower case, [a-z0-9-], starting and ending alphanumeric."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower().replace("+", "-")).strip("-")
    if not s:
        raise ExportError(f"{text!r} leaves nothing usable in a Kubernetes name")
    return s


def _config_name(devices: dict[str, int]) -> str:
    """'kneepoint-1x3g.40gb-2x2g.20gb' (largest first), or a digest when longer than a label value may be."""
    if not devices:
        return "kneepoint-mig-disabled"
    parts = "-".join(f"{c}x{p.replace('+', '.')}" for p, c in sorted(devices.items(),
                                                                     key=lambda kv: (-int(kv[0][0]), kv[0])))
    name = f"kneepoint-{parts}"
    if len(name) > MAX_K8S_NAME:
        name = "kneepoint-" + hashlib.sha1(parts.encode()).hexdigest()[:12]
    return name


def _per_gpu_layouts(scenario: Scenario) -> list[Optional[list[str]]]:
    g = scenario.gpu
    if g.shares is not None:
        raise ExportError("gpu.shares: GPU% (MPS) shares have no MIG or Kubernetes resource to export; "
                          "use a MIG layout or whole GPUs")
    return g.per_gpu_layouts()


def placed_layout(gpu: Gpu, entries: list[str]) -> MigLayout:
    """One GPU's layout placed by the packer: a layout that cannot be placed raises the packer's
    PackingError, which names the instance and why (as an ExportError)."""
    devices: dict[str, int] = {}
    for e in entries:
        name = e.split("@")[0]
        devices[name] = devices.get(name, 0) + 1
    try:
        return pack(gpu, devices, gpus=1)[0]
    except PackingError as e:
        raise ExportError(f"the layout {' '.join(entries)} cannot be placed on one {gpu.sku}: {e}") from None


def check_layouts(data: dict | str | Scenario, ctx: Context) -> None:
    """Refuse a design whose per-GPU layouts cannot be placed, before anything else is validated, naming the
    instance (engine.partition.pack); fields other than the layouts are left to load_scenario."""
    sc = data if isinstance(data, Scenario) else load_scenario(data)  # the contract alone, no catalogue yet
    g = require_gpu(sc, "exporting MIG, Triton and Kubernetes files")
    gpu = ctx.book.catalog.gpu(g.sku)
    if g.shares is not None:
        return
    for k, lay in enumerate(_per_gpu_layouts(sc)):
        if lay:
            try:
                placed_layout(gpu, lay)
            except ExportError as e:
                raise ExportError(f"GPU{k}: {e}") from None


def deploy_plan(data: dict | str | Scenario, ctx: Context, servers: int = 1) -> DeployPlan:
    """The deployment of a scenario's design (validated here; a layout that cannot be placed is refused first) on
    `servers` identical servers that split the traffic evenly (what `size` answers): replicas, GPUs and the
    offered rate are the scenario's times `servers`; throughput per replica and host cores per replica are one
    server's."""
    if isinstance(servers, bool) or not isinstance(servers, int) or not 1 <= servers <= MAX_SERVERS:
        raise ExportError(f"servers: a whole number in 1..{MAX_SERVERS}, got {servers!r}")
    check_layouts(data, ctx)
    sc = load_scenario(data, ctx.book)
    g = require_gpu(sc, "exporting MIG, Triton and Kubernetes files")
    gpu = ctx.book.catalog.gpu(g.sku)
    layouts = _per_gpu_layouts(sc)
    design = build_design(sc, ctx)
    sla_rps = sla_bounded_rate(design)
    if sla_rps <= 0:
        raise ExportError(f"no load meets the design's SLA (p{sc.workload.sla.percentile:g} <= {design.sla_s * 1e3:g} "
                          "ms), so no autoscaling target follows from it; fix the design first "
                          "(`python -m engine evaluate` names the bottleneck)")
    configs = [c.model_copy(update={"gpus": c.gpus * servers, "nodes": math.ceil(c.gpus * servers / GPUS_PER_SERVER)})
               for c in _configs(gpu, layouts)]
    rate = sc.workload.arrival.rate_rps
    parts = design.gpu.partitions
    full = [p.max_batch / p.service(p.max_batch) for p in parts]  # items/s at Batch_max
    pooled = scheduler_rule_for(design.scheduler).pooled  # a shared queue splits work by speed, dealing evenly
    shares = [c / sum(full) for c in full] if pooled else [1 / len(parts)] * len(parts)
    used_cores = sum(min(rate, s.capacity_rps) * s.host_cpu_s for s in design.host_stages)
    tq_us = round(design.gpu.time_queue_s * 1e6) if rule_for(design.gpu.policy).batches else 0
    profiles: dict[str, dict] = {}
    for p, share in zip(parts, shares):
        d = profiles.setdefault(p.name, {"replicas": 0, "share": 0.0, "batch_max": p.max_batch})
        d["replicas"] += 1
        d["share"] += share
        d["batch_max"] = max(d["batch_max"], p.max_batch)
    plans = []
    for name, d in profiles.items():
        per_replica = sla_rps * d["share"] / d["replicas"]
        offered = rate * d["share"] * servers
        replicas = d["replicas"] * servers
        need = math.ceil(offered / (per_replica * HPA_HEADROOM))
        plans.append(ProfilePlan(
            profile=name, slug=slug(name) if name != WHOLE_GPU else "gpu", replicas=replicas,
            batch_max=int(d["batch_max"]), time_queue_us=tq_us, sla_rps_per_replica=per_replica,
            offered_rps=offered, min_replicas=min(max(need, 1), replicas),
            cpu_cores_per_replica=used_cores * d["share"] / d["replicas"],
            resource="nvidia.com/gpu" if name == WHOLE_GPU else f"nvidia.com/mig-{name}"))
    return DeployPlan(name=sc.name, model=sc.model, model_slug=slug(sc.model), sku=g.sku,
                      mig_capable=gpu.mig_capable, gpus=g.count * servers, servers=servers,
                      rate_rps=rate * servers, sla_ms=design.sla_s * 1e3,
                      sla_percentile=sc.workload.sla.percentile, sla_bounded_rps=sla_rps * servers,
                      batching=design.gpu.policy.value, preprocessing=sc.preprocessing.device.value,
                      configs=configs, profiles=plans)


def _configs(gpu: Gpu, layouts: list[Optional[list[str]]]) -> list[MigConfig]:
    """One mig-parted configuration per distinct per-GPU layout (none for a GPU without MIG)."""
    if not gpu.mig_capable:
        return []
    groups: dict[tuple, dict] = {}
    for lay in layouts:
        placed = placed_layout(gpu, lay) if lay else None
        devices: dict[str, int] = {}
        for inst in (placed.instances if placed else ()):
            devices[inst.profile] = devices.get(inst.profile, 0) + 1
        key = tuple(sorted(devices.items()))
        grp = groups.setdefault(key, {"devices": devices, "gpus": 0, "placed": placed.labels() if placed else []})
        grp["gpus"] += 1
    return [MigConfig(name=_config_name(v["devices"]), devices=v["devices"], gpus=v["gpus"],
                      nodes=math.ceil(v["gpus"] / GPUS_PER_SERVER), placed=v["placed"]) for v in groups.values()]
