"""Comparisons that reproduce each seed paper's headline result, one preset away on the Compare page.

Each preset builds its designs from the Design page's default question (engine.presets.DEFAULT_SCENARIO)
by changing only what the paper compares; designs that need an engine answer first (PARIS's partition
counts, Multi-Model's instances) get it from the engine when the preset is built, never from a table.
`build_preset(name, ctx)` returns the designs as scenario dicts; an unknown name lists the valid ones.
"""

from __future__ import annotations

import copy
from typing import Callable

from pydantic import BaseModel, ConfigDict

from engine.presets import DEFAULT_SCENARIO
from engine.errors import KneepointError
from engine.partition.plan import plan
from engine.studies.partitioning import seed_like_scenario
from engine.tenancy.multimodel import multi_model
from engine.vocab import RpcPreset


class PresetError(KneepointError):
    """An unknown preset, or one whose engine part cannot answer; the message says which."""


class SeedPreset(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    seed: str  # the paper, as in shared/seeds
    question: str  # what the comparison shows


def _with(name: str, **parts) -> dict:
    s = copy.deepcopy(DEFAULT_SCENARIO)
    s["name"] = name
    for k, v in parts.items():
        s[k] = {**s.get(k, {}), **v} if isinstance(v, dict) and isinstance(s.get(k), dict) else v
    return s


def _preba(ctx) -> list[dict]:
    return [_with(f"7 x 1g, {label}", preprocessing={"device": dev})
            for dev, label in (("cpu", "CPU preprocessing"), ("dpu", "DPU preprocessing"), ("none", "ideal (none)"))]


#: PREBA's own vision models (seed Sec 5.1: MobileNet v3 small, SqueezeNet v1.1, Swin-Transformer); no published
#: curve exists for them, so their service times are the estimator's (engine.estimator), labelled so
PREBA_MODELS = ("mobilenetv3-small", "squeezenet1.1", "swin-t")


def _preba_models(ctx) -> list[dict]:
    """Seed Sec 3 / Fig 5: 7 x 1g against 1 x 7g for each of PREBA's own vision models, preprocessing ideal."""
    designs = []
    for model in PREBA_MODELS:
        for layout, label in ((["1g.10gb"] * 7, "7 x 1g"), (["7g.80gb"], "1 x 7g")):
            designs.append(_with(f"{model}, {label}", model=model, gpu={"layout": layout},
                                 preprocessing={"device": "none"}, rpc={"preset": "local"}))
    return designs


def _splitrpc(ctx) -> list[dict]:
    return [_with(f"RPC {p.value}", rpc={"preset": p.value}, preprocessing={"device": "none"}) for p in RpcPreset]


def _paris(ctx) -> list[dict]:
    """Seed Sec V-VI: ResNet-50 on four A100s, log-normal query sizes, each query at its own size, SLA from
    GPU(7); the wide distribution of Sec VI-C (Fig 13a), where heterogeneity pays most."""
    sku = "A100-SXM4-80GB"
    base = seed_like_scenario(ctx.book, "resnet50", sku, 4,
                              {"kind": "lognormal", "mu": 1.5, "sigma": 1.5, "max_size": 32})
    gmax, par = plan("gpu-max", base, ctx), plan("paris", base, ctx)
    elsa = {"policy": "elsa", "alpha": 1.5, "beta": 1.0}  # slack margin: see engine.studies.partitioning
    return [{**gmax.scenario, "name": "GPU(max) + FIFS", "scheduler": {"policy": "fifs"}},
            {**par.scenario, "name": "PARIS + FIFS", "scheduler": {"policy": "fifs"}},
            {**par.scenario, "name": "PARIS + ELSA", "scheduler": elsa}]


def _primitives(ctx) -> list[dict]:
    """Seed Sec V-D / Table IV: one ResNet-50 instance per T4 against the Multi-Model plan within 30 ms."""
    sku, deadline = "T4-16GB", 30.0
    mm = multi_model(ctx.book, "resnet50", sku, deadline, batch=8)
    if mm.best is None:
        raise PresetError(f"Multi-Model finds no plan for resnet50 on {sku} within {deadline:g} ms: {mm.reason}")
    common = {"model": "resnet50", "preprocessing": {"device": "none"}, "rpc": {"preset": "local"},
              "batching": {"policy": "fixed", "max_batch": 8},
              "workload": {"arrival": {"kind": "poisson", "rate_rps": 400},
                           "sla": {"latency_ms": deadline, "percentile": 99}}}
    n, pct = mm.best.instances, mm.best.gpu_pct_each
    return [{**common, "name": "one instance per GPU", "gpu": {"sku": sku}},
            {**common, "name": f"Multi-Model {n} x {pct}%", "gpu": {"sku": sku, "shares": [pct] * n}}]


def _eif(ctx) -> list[dict]:
    """EIF seed Sec V: one FPGA board with 8 accelerators, 1 to 6 hardware threads each (tenants = 8 x threads).
    The seed gives speed-ups, not times, so the dedicated time per request is the T4's batch-1 time, named."""
    ms = ctx.book.predict("resnet50", "T4-16GB", "full", 1).mean_s * 1e3
    common = {"model": "resnet50", "preprocessing": {"device": "none"}, "rpc": {"preset": "local"},
              "batching": {"policy": "none"},
              "workload": {"arrival": {"kind": "poisson", "rate_rps": 2000}, "sla": {"latency_ms": 15}}}
    gpu = {**common, "name": "T4 GPU, batches up to 8", "gpu": {"sku": "T4-16GB"},
           "batching": {"policy": "fixed", "max_batch": 8}}
    return [gpu] + [{**common, "name": f"FPGA 8 acc x {t} threads ({8 * t} tenants)",
                     "fpga": {"threads_per_accelerator": t, "ms_per_request": round(ms, 4)}} for t in (1, 2, 4, 6)]


_BUILDERS: dict[str, tuple[SeedPreset, Callable]] = {
    "preba": (SeedPreset(name="PREBA: CPU vs DPU preprocessing vs ideal on 7 x 1g", seed="preba-mig-preprocessing-batching",
                         question="With CPU preprocessing, 7 x 1g ResNet-50 misses a 15 ms p99 at every load (the latency "
                                  "floor of the CPU path) and its host cores saturate first: how much of the ideal "
                                  "does an FPGA DPU recover?"), _preba),
    "preba-models": (SeedPreset(name="PREBA's own models: 7 x 1g vs 1 x 7g for MobileNetV3, SqueezeNet, Swin-T",
                                seed="preba-mig-preprocessing-batching",
                                question="For PREBA's own vision models (estimated: no published curve exists), "
                                         "do seven 1g slices serve more than one 7g instance, and for which model "
                                         "least? (Preprocessing ideal and RPC local, so the GPU side alone answers.)"),
                     _preba_models),
    "splitrpc": (SeedPreset(name="SplitRPC: the six RPC paths", seed="splitrpc-control-data-path-rpc",
                            question="What does each RPC path add to latency and host CPU, and what does "
                                     "splitting control and data paths buy?"), _splitrpc),
    "paris-elsa": (SeedPreset(name="PARIS/ELSA: GPU(max) + FIFS vs PARIS + FIFS vs PARIS + ELSA",
                              seed="paris-elsa-mig-partitioning-scheduling",
                              question="Does a heterogeneous PARIS partition beat the best homogeneous one, and what "
                                       "does ELSA add? (The analytic engine prices ELSA as FIFS: press 'Simulate' "
                                       "for ELSA's size-aware routing.)"), _paris),
    "gpu-primitives": (SeedPreset(name="GPU primitives: one instance per GPU vs Multi-Model GPU% shares",
                                  seed="gpu-runtime-primitives-spatial-sharing",
                                  question="How much more does a T4 serve within 30 ms when Multi-Model splits it "
                                           "into GPU% shares?"), _primitives),
    "eif": (SeedPreset(name="EIF: FPGA hardware threads as tenants vs a GPU", seed="eif-fpga-inference-as-a-service",
                       question="How do tenants and throughput grow with hardware threads per accelerator, at what "
                                "slowdown? (Dedicated FPGA time: the T4's batch-1 time, as the seed reports "
                                "speed-ups only; cold start is on the Tenancy page.)"), _eif),
}


def presets() -> dict[str, SeedPreset]:
    """Every preset by key."""
    return {k: v[0] for k, v in _BUILDERS.items()}


def build_preset(key: str, ctx) -> list[dict]:
    """The designs of preset `key` as scenario dicts (validate with engine.scenario.load_scenario)."""
    if key not in _BUILDERS:
        raise PresetError(f"{key!r} is not a preset; valid: {', '.join(_BUILDERS)}")
    return _BUILDERS[key][1](ctx)
