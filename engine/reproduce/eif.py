"""EIF (FPGA inference-as-a-service): tenants, temporal-multiplexing slowdown and gains, cold start, speed-ups.

engine.fpga.model fits its slowdown law through the Sec I extremes (0.5 % / 19.5 % slowdown, 15.7x / 40.8x
board gain), and the tenants are the Sec V-C design (8 accelerators x 6 threads): in-sample. Cold start
comes from engine.fpga.coldstart's streaming model, not fitted to the 5 %: out of sample. The Fig 9a
speed-ups need an FPGA service time, which the engine takes as an input (the paper gives only ratios).
"""

from __future__ import annotations

from engine.reproduce._common import remembered
from engine.reproduce.entry import Entry
from engine.reproduce.preset import Preset, SeedPreset
from engine.fpga import model as m
from engine.fpga.model import EIF_ACCELERATORS_PER_BOARD, EIF_THREADS_PER_ACCELERATOR, tenancy
from engine.studies.tenancy_backends import tenancy_backends_study

#: the slowdown law's anchors (engine.fpga.model.EIF_ANCHORS) and the tenancy design
FITTED = ("eif-slowdown-least", "eif-slowdown-most", "eif-gain-least", "eif-gain-most", "eif-tenants")
#: a model of the EIF benchmarks (Table I) the store has a curve and a weight size for; the T4 stands in for the
#: GPU the FPGA's time is compared with (the EIF seed's TITAN RTX has no curve)
MODEL, GPU = "resnet50", "T4-16GB"


def _tenants(ctx) -> float:
    return tenancy(1, EIF_ACCELERATORS_PER_BOARD, EIF_THREADS_PER_ACCELERATOR).tenants_per_board


def _slowdown(threads: int, sparsity_name: str):
    def compute(ctx):
        return 100 * m.slowdown(threads, getattr(m, sparsity_name))
    return compute


def _gain(threads: int, sparsity_name: str):
    def compute(ctx):
        table = m.fpga_tenancy_table(1.0, getattr(m, sparsity_name), threads=[threads])
        return float(table["gain_vs_dedicated_thread"].iloc[0])
    return compute


def _cold_start_pct(ctx) -> float:
    study = remembered(ctx, "eif-backends", lambda: tenancy_backends_study(ctx.book, MODEL, GPU))
    fpga = study.cold_start[study.cold_start["platform"] == "fpga"].iloc[0]
    return 100 * float(fpga["cold_start_share"])


_NO_FPGA_TIME = ("the engine has no model of the EIF systolic array's compute time: an FPGA design's time per "
                 "request is an input (the paper reports only speed-ups, Fig 9a, not times), so a speed-up "
                 "computed from it would be the input read back")

ENTRIES: tuple[Entry, ...] = (
    Entry("eif-tenants", "engine.fpga.model.tenancy: 1 board x 8 accelerators x 6 hardware threads",
          "tenants = boards x accelerators x threads; 8 and 6 are the Sec V-C design stated with the 48",
          _tenants, FITTED),
    Entry("eif-slowdown-least", "engine.fpga.model.slowdown(2 threads, 70 % sparsity)",
          "bilinear-in-log fit through the four Sec I extremes: reads its own anchor back",
          _slowdown(2, "SPARSITY_HIGH"), FITTED),
    Entry("eif-slowdown-most", "engine.fpga.model.slowdown(6 threads, 50 % sparsity)",
          "bilinear-in-log fit through the four Sec I extremes: reads its own anchor back",
          _slowdown(6, "SPARSITY_LOW"), FITTED),
    Entry("eif-gain-least", "fpga_tenancy_table: 8 accelerators x 2 threads at 50 % sparsity",
          "gain = tenants / (1 + slowdown); the fit's anchor was solved from this gain", _gain(2, "SPARSITY_LOW"),
          FITTED),
    Entry("eif-gain-most", "fpga_tenancy_table: 8 accelerators x 6 threads at 70 % sparsity",
          "gain = tenants / (1 + slowdown); the fit's anchor was solved from this gain", _gain(6, "SPARSITY_HIGH"),
          FITTED),
    Entry("eif-coldstart", f"tenancy_backends_study({MODEL}, {GPU}): FPGA streaming cold start",
          "streaming: the first weight slice over PCIe Gen3 x8, then compute overlaps the rest; with no fixed "
          "set-up time the engine's share is far below the paper's ~5 % (the set-up the paper measured is not "
          "described)", _cold_start_pct, FITTED),
    Entry("eif-speedup-cpu-min", "", "", not_modelled=_NO_FPGA_TIME),
    Entry("eif-speedup-cpu-max", "", "", not_modelled=_NO_FPGA_TIME),
    Entry("eif-speedup-gpu-min", "", "", not_modelled=_NO_FPGA_TIME),
    Entry("eif-speedup-gpu-max", "", "", not_modelled=_NO_FPGA_TIME),
)


def compare_designs(ctx) -> list[dict]:
    """Sec V: one FPGA board with 8 accelerators, 1 to 6 hardware threads each (tenants = 8 x threads), beside a
    GPU. The seed gives speed-ups, not times, so the dedicated time per request is the GPU's batch-1 time, named."""
    ms = ctx.book.predict(MODEL, GPU, "full", 1).mean_s * 1e3
    common = {"model": MODEL, "preprocessing": {"device": "none"}, "rpc": {"preset": "local"},
              "batching": {"policy": "none"},
              "workload": {"arrival": {"kind": "poisson", "rate_rps": 2000}, "sla": {"latency_ms": 15}}}
    gpu = {**common, "name": "T4 GPU, batches up to 8", "gpu": {"sku": GPU},
           "batching": {"policy": "fixed", "max_batch": 8}}
    return [gpu] + [{**common, "name": f"FPGA {EIF_ACCELERATORS_PER_BOARD} acc x {t} threads "
                                      f"({EIF_ACCELERATORS_PER_BOARD * t} tenants)",
                     "fpga": {"threads_per_accelerator": t, "ms_per_request": round(ms, 4)}} for t in (1, 2, 4, 6)]


PRESETS: tuple[Preset, ...] = (
    Preset("eif", SeedPreset(
        name="EIF: FPGA hardware threads as tenants vs a GPU", seed="eif-fpga-inference-as-a-service",
        question="How do tenants and throughput grow with hardware threads per accelerator, at what slowdown? "
                 "(Dedicated FPGA time: the T4's batch-1 time, as the seed reports speed-ups only; cold start is on "
                 "the Tenancy page.)"), compare_designs),
)
