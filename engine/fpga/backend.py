"""EIF FPGA boards as a scenario backend: the engine's accelerator side (GpuSide) built from hardware threads.

Each hardware thread that serves the scenario's model is one server (a Partition) with a deterministic
per-request time = dedicated time x (1 + slowdown(threads per accelerator, sparsity)) (engine.fpga.model).
Batching on a thread means running items back to back (EIF Sec V-A serves batch 1), so a thread takes
one request at a time and a query of q items costs q x that time: the side's policy is 'none' whatever
the scenario asks, and capacity is threads / per-request time (M/D/c). The dedicated time is the
scenario's `fpga.ms_per_request`, else a batch-1 latency point of the model stored under the board's
name as sku (the EIF seed reports speedups only, Sec V-D, no per-request times).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from engine.accelerator_side import GpuSide, Link, Partition
from engine.fpga.model import FpgaBoard, FpgaModelError, Tenancy, board, service_time, tenancy
from engine.errors import KneepointError
from engine.policy_rules import rule_for
from engine.vocab import BatchingPolicy, PreprocessDevice

if TYPE_CHECKING:  # the specs' types only: the Scenario's validation (engine.validate) calls check() below
    from engine.profiles import ProfileBook
    from engine.scenario import FpgaSpec, Scenario

KNEE_RULE = "none: one request per hardware thread (EIF batch 1)"


class FpgaSpecError(KneepointError):
    """An fpga spec that does not fit its board or the profile store; names the field path and value."""

    def __init__(self, path: str, value, message: str):
        self.path, self.value = path, value
        super().__init__(message)


def configured(spec: FpgaSpec) -> tuple[FpgaBoard, Tenancy]:
    """The board and its tenancy with the spec's counts, the board's maxima where the spec gives none."""
    try:
        b = board(spec.board)
    except FpgaModelError as e:
        raise FpgaSpecError("fpga.board", spec.board, str(e)) from None
    acc = spec.accelerators_per_board if spec.accelerators_per_board is not None else b.max_accelerators
    thr = spec.threads_per_accelerator if spec.threads_per_accelerator is not None else b.max_threads
    if acc > b.max_accelerators:
        raise FpgaSpecError("fpga.accelerators_per_board", acc, f"{b.label} holds at most {b.max_accelerators} "
                            f"accelerators (EIF Sec V-C), got {acc}")
    if thr > b.max_threads:
        raise FpgaSpecError("fpga.threads_per_accelerator", thr, f"{b.label} accelerators run at most "
                            f"{b.max_threads} hardware threads (EIF Sec V-C), got {thr}")
    t = tenancy(spec.boards, acc, thr)
    if spec.model_threads is not None and spec.model_threads > t.tenants:
        raise FpgaSpecError("fpga.model_threads", spec.model_threads, f"{spec.boards} board(s) x {acc} accelerators "
                            f"x {thr} threads give {t.tenants} tenants, fewer than {spec.model_threads}")
    return b, t


def dedicated_ms(spec: FpgaSpec, model: str, book) -> tuple[float, str]:
    """(ms per request on a dedicated accelerator, provenance): the spec's value, else the store's point."""
    if spec.ms_per_request is not None:
        return spec.ms_per_request, "user"
    pts = book.points
    rows = pts[(pts["model"] == model) & (pts["sku"] == spec.board) & (pts["batch"] == 1)]
    if rows.empty:
        raise FpgaSpecError("fpga.ms_per_request", None, (
            f"no per-request time of {model} on {spec.board} in the profile store (the EIF seed reports speedups "
            f"only, Sec V-D); give fpga.ms_per_request in ms, or import a batch-1 point with sku '{spec.board}'"))
    rows = rows.sort_values("kind", key=lambda k: k.map({"measured": 0, "published": 1}).fillna(2))
    return float(rows.iloc[0]["mean_ms"]), str(rows.iloc[0]["kind"])


def check(scenario: Scenario, book) -> None:
    """Everything an fpga scenario needs that the spec alone cannot say; raises FpgaSpecError."""
    if scenario.preprocessing.device == PreprocessDevice.GPU:
        raise FpgaSpecError("preprocessing.device", "gpu", "GPU decoding needs a GPU; with fpga, preprocess on "
                            "cpu, dpu or none")
    configured(scenario.fpga)
    if book is not None:
        dedicated_ms(scenario.fpga, scenario.model, book)


def pcie_gen(spec: FpgaSpec) -> int:
    """PCIe generation of the board's host link (the RPC path's host<->device copies use it)."""
    return configured(spec)[0].pcie_gen


def build_fpga_side(scenario: Scenario, book) -> GpuSide:
    """One Partition per hardware thread serving the model (board b, accelerator a, thread t)."""
    spec = scenario.fpga
    _, ten = configured(spec)
    ms, provenance = dedicated_ms(spec, scenario.model, book)
    svc = service_time(ms, ten.threads_per_accelerator, spec.sparsity)
    q = scenario.workload.query_size
    top = q.largest
    table = svc.ms_per_request / 1e3 * np.arange(1, top + 1)  # q items back to back on one thread
    n = spec.model_threads if spec.model_threads is not None else ten.tenants
    per_acc, per_board = ten.threads_per_accelerator, ten.tenants_per_board
    parts = tuple(Partition(gpu_index=i // per_board, name=f"fpga-thread:{ten.threads_per_accelerator}",
                            label=f"FPGA{i // per_board} acc{i % per_board // per_acc} t{i % per_acc}",
                            provenance=provenance, max_batch=top, knee_batch=1, knee_time_s=float(table[0]),
                            mean_s=table, tail_s=table)
                  for i in range(n))
    notes = list(svc.notes)
    notes.append(f"{n} of {ten.tenants} tenants serve {scenario.model} ({ten.boards} board(s) x "
                 f"{ten.accelerators_per_board} accelerators x {ten.threads_per_accelerator} threads)")
    if rule_for(scenario.batching.policy).batches:
        notes.append(f"batching '{scenario.batching.policy.value}' does not apply on FPGA threads: each serves one "
                     "request at a time (EIF batch 1)")
    return GpuSide(partitions=parts, policy=BatchingPolicy.NONE, time_queue_s=0.0, knee_rule=KNEE_RULE,
                   input_len=None, notes=tuple(notes))


def with_board_completion(scenario: Scenario) -> Scenario:
    """An FPGA scenario whose RPC path completes as its board does (FpgaBoard.completion), unless the scenario
    sets rpc.completion itself: the GPU presets spin-wait, which would hold a host core for the whole
    accelerator time of every request. Other scenarios are returned unchanged."""
    if scenario.fpga is None or scenario.rpc.completion is not None:
        return scenario
    try:
        done = board(scenario.fpga.board).completion
    except FpgaModelError:
        return scenario  # the GPU side names the bad board
    return scenario.model_copy(update={"rpc": scenario.rpc.model_copy(update={"completion": done})})


class FpgaBackend:
    """EIF FPGA boards as a scenario's accelerators: the `fpga` entry of engine.analytic.accelerators.BACKENDS."""

    name = "fpga"

    def side(self, scenario: Scenario, book: ProfileBook) -> GpuSide:
        return build_fpga_side(scenario, book)

    def adapted(self, scenario: Scenario) -> Scenario:
        return with_board_completion(scenario)

    def link(self, scenario: Scenario, book: ProfileBook) -> Link:
        # the board's own PCIe link, no GPU decoders, and one command per request (priced as one kernel launch)
        return Link(name=f"fpga:{scenario.fpga.board}", pcie_gen=pcie_gen(scenario.fpga), decode_gpu=None, kernels=1)


FPGA = FpgaBackend()
