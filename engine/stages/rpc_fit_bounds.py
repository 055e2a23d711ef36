"""How far the SplitRPC calibration's in-sample figures pin its out-of-sample predictions (identifiability).

The RPC components (engine.stages.rpc) were tuned to the SplitRPC figures in rpc_calibration.FIGURES (Fig 8's
averages and per-service statements, Fig 1, Fig 3) and the GPU-primitives figures. Those figures do not fix every
component, so another parameter vector could meet them as well and predict the out-of-sample results (Sec 1's
gRPC tax, Sec 6.3's BERT low-load saving, Sec 6.4's ResNet18 tail at 1,500 req/s) differently. `bound` searches
the plausible ranges in SPACE for the extreme value of one such prediction over every vector that meets all the
asserted figures within their tolerances: if even the extreme misses the paper, no honest refit of this model
(same mechanisms, other costs) reaches it, and the miss is the mechanism's or the data's, not the fit's.

The search is local (SLSQP from the tuned defaults and from seeded perturbations of them), so a bound is the best
found, not a proof; tools/rpc_fit_bounds.py prints them and tests/test_rpc_fit_bounds.py checks the figures that
engine.reproduce.splitrpc quotes. Units: the components' (us, ns/B, GB/s); quantities in their keys' units.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict

from engine.stages.rpc import PRESETS, RpcComponents, serial_executor_s, with_changes
from engine.stages.rpc_calibration import FIGURES, SERVICES, model_figures, splitrpc_e2e
from engine.vocab import RpcPreset

#: the SplitRPC presets' own stack (rpc._SPLIT) is not the gRPC one: base-field changes skip these there
_SPLIT_STACK = ("transport_us_per_request", "transport_ns_per_byte", "transport_window_bytes",
                "client_serdes_us_per_request", "client_serdes_ns_per_byte", "server_serdes_us_per_request",
                "server_serdes_ns_per_byte")
#: the SplitRPC client's payload copy into packets (a field of the SplitRPC presets, tuned apart)
SPLIT_CLIENT = "splitrpc_client_serdes_ns_per_byte"


class Range(BaseModel):
    """One component searched between lo and hi (the component's unit); why: what makes the range plausible."""

    model_config = ConfigDict(frozen=True)
    field: str
    lo: float
    hi: float
    why: str


#: every tuned component of the SplitRPC fit and the untuned per-request / per-byte costs beside them
SPACE: tuple[Range, ...] = (
    Range(field="client_serdes_us_per_request", lo=0, hi=20, why="protobuf call overhead"),
    Range(field="client_serdes_ns_per_byte", lo=0, hi=1, why="protobuf at 1 GB/s or faster"),
    Range(field="server_serdes_us_per_request", lo=0, hi=20, why="as the client"),
    Range(field="server_serdes_ns_per_byte", lo=0, hi=1, why="as the client"),
    Range(field="transport_us_per_request", lo=0, hi=400, why="up to 3x Triton's 128 us server overhead"),
    Range(field="transport_ns_per_byte", lo=0, hi=2, why="slice copies at 0.5 GB/s or faster"),
    Range(field="transport_us_per_window", lo=0, hi=400, why="a WINDOW_UPDATE round trip through the machinery"),
    Range(field="kernel_stack_us_per_request", lo=0, hi=60, why="syscalls and wake-ups"),
    Range(field="kernel_stack_us_per_packet", lo=0, hi=5, why="skb + TCP per segment"),
    Range(field="kernel_stack_ns_per_byte", lo=0, hi=1, why="kernel<->user copy at 1 GB/s or faster"),
    Range(field="bypass_stack_us_per_request", lo=0, hi=10, why="VMA/DPDK poll loop"),
    Range(field="snic_arm_us_per_packet", lo=0, hi=5, why="ARM core per packet"),
    Range(field="snic_arm_copy_gbps", lo=0.5, hi=20, why="ARM copy into NIC DRAM"),
    Range(field="gpu_managed_us_per_kernel", lo=0, hi=80, why="device-side launch + sync per kernel"),
    Range(field="gpu_managed_sync_us", lo=0, hi=600, why="O2 parent kernel + final sync"),
    Range(field="cpu_copy_gbps", lo=2, hi=30, why="one core gathering payloads"),
    Range(field="memcpy_launch_us", lo=0, hi=30, why="synchronous cudaMemcpy fixed cost"),
    Range(field=SPLIT_CLIENT, lo=0, hi=1, why="SplitRPC client copy into packets"),
)


def tuned_point() -> dict[str, float]:
    """The calibration's values of SPACE (the defaults the engine runs)."""
    base = RpcComponents()
    return {r.field: (PRESETS[RpcPreset.SPLITRPC_PNIC].client_serdes_ns_per_byte if r.field == SPLIT_CLIENT
                      else getattr(base, r.field)) for r in SPACE}


def overrides(point: dict[str, float], preset: RpcPreset) -> dict[str, float]:
    """The rpc.components overrides that turn `preset`'s defaults into `point`'s (a scenario can carry them)."""
    base = {k: v for k, v in point.items() if k != SPLIT_CLIENT}
    if PRESETS[preset].transport_window_bytes == 0:  # a SplitRPC-stack preset keeps its own transport and SerDes
        base = {k: v for k, v in base.items() if k not in _SPLIT_STACK}
        if PRESETS[preset].network:
            base["client_serdes_ns_per_byte"] = point[SPLIT_CLIENT]
    return base


def presets_at(point: dict[str, float]) -> dict[RpcPreset, RpcComponents]:
    """Every preset with `point`'s values of SPACE."""
    return {p: with_changes(c, **overrides(point, p)) for p, c in PRESETS.items()}


def slack(presets: dict[RpcPreset, RpcComponents]) -> dict[str, float]:
    """Tolerance left on each asserted calibration figure (negative: missed), in the figure's unit."""
    values = model_figures(presets)
    return {f.key: f.tolerance - abs(values[f.key] - f.paper) for f in FIGURES if f.asserted}


def quantities(presets: dict[RpcPreset, RpcComponents]) -> dict[str, float]:
    """The out-of-sample predictions the calibration's components set directly (no queueing):
    - bert_reduction_pct: Fig 8-style E2E reduction of SplitRPC-pNIC vs gRPC-VMA for BERT (%), the zero-load limit
      of Sec 6.3's low-load mean saving;
    - grpc_tax_resnet50_us: ResNet50's E2E minus GPU time under kernel-stack gRPC (us), Sec 1's tax;
    - resnet18_vma_batch1_cap_rps: a gRPC-VMA run-to-completion executor's cap at batch 1 for ResNet18 (Table 1's
      588 us of GPU plus rpc.serial_executor_s), req/s: below 1,500 its p99 at Sec 6.4's 1,500 req/s is unbounded."""
    runs = splitrpc_e2e(presets)
    bert = {p: runs[p]["BERT"].e2e_s for p in (RpcPreset.SPLITRPC_PNIC, RpcPreset.GRPC_BYPASS)}
    r18 = next(s for s in SERVICES if s.name == "ResNet18")
    item, per_batch = serial_executor_s(with_changes(presets[RpcPreset.GRPC_BYPASS], pcie_gen=3), r18.request_bytes,
                                        r18.response_bytes, r18.kernels)
    return {"bert_reduction_pct": 100 * (1 - bert[RpcPreset.SPLITRPC_PNIC] / bert[RpcPreset.GRPC_BYPASS]),
            "grpc_tax_resnet50_us": model_figures(presets)["grpc_tax_resnet50"],
            "resnet18_vma_batch1_cap_rps": 1.0 / (r18.gpu_us * 1e-6 + item + per_batch)}


def _two_sided(presets: dict[RpcPreset, RpcComponents]) -> list[float]:
    """slack() as smooth constraints: tolerance - (model - paper) >= 0 and tolerance + (model - paper) >= 0."""
    values = model_figures(presets)
    return [f.tolerance + sign * (values[f.key] - f.paper) for f in FIGURES if f.asserted for sign in (-1.0, 1.0)]


class Bound(BaseModel):
    """The extreme of one quantity found over the points that meet every asserted figure."""

    model_config = ConfigDict(frozen=True)
    quantity: str
    sense: Literal["min", "max"]
    value: float
    tuned: float  # the quantity at the calibration's own point
    point: dict[str, float]
    quantities: dict[str, float]  # every quantity at `point`
    tightest: tuple[str, ...]  # the figures whose tolerance is (nearly) used up at `point`


def bound(quantity: str, sense: Literal["min", "max"], starts: int = 4, seed: int = 0,
          space: tuple[Range, ...] = SPACE) -> Bound:
    """The min or max of `quantities()[quantity]` over `space` subject to every asserted figure within tolerance:
    SLSQP from the tuned point and from `starts` seeded perturbations of it (each value x U(0.5, 1.5), clipped)."""
    from scipy.optimize import minimize  # scipy.optimize is heavy to import: loaded when a bound is asked for

    names = [r.field for r in space]
    lo, hi = [r.lo for r in space], [r.hi for r in space]
    tuned = tuned_point()
    sign = -1.0 if sense == "max" else 1.0

    def at(x) -> dict[RpcPreset, RpcComponents]:
        return presets_at({**tuned, **dict(zip(names, (float(v) for v in x)))})

    def objective(x) -> float:
        return sign * quantities(at(x))[quantity]

    def feasible(x) -> bool:
        return min(slack(at(x)).values()) >= -1e-6

    rng = random.Random(seed)
    x0 = [tuned[n] for n in names]
    inits = [x0] + [[min(h, max(lw, v * rng.uniform(0.5, 1.5))) for v, lw, h in zip(x0, lo, hi)]
                    for _ in range(starts)]
    best = None
    for init in inits:
        res = minimize(objective, init, method="SLSQP", bounds=list(zip(lo, hi)),
                       constraints=[{"type": "ineq", "fun": lambda x: _two_sided(at(x))}],
                       options={"maxiter": 300, "ftol": 1e-7})
        if feasible(res.x) and (best is None or objective(res.x) < objective(best)):
            best = res.x
    if best is None:
        raise ValueError(f"no start reached a point that meets every figure while bounding {quantity}")
    point = {**tuned, **dict(zip(names, (float(v) for v in best)))}
    presets = presets_at(point)
    left = slack(presets)
    tolerance = {f.key: f.tolerance for f in FIGURES}
    return Bound(quantity=quantity, sense=sense, value=quantities(presets)[quantity],
                 tuned=quantities(PRESETS)[quantity], point=point, quantities=quantities(presets),
                 tightest=tuple(k for k, s in left.items() if s <= 0.02 * tolerance[k]))
