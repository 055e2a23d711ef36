"""EIF FPGA inference-as-a-service: boards, tenants, temporal-multiplexing slowdown, per-request time.

EIF seed (eif-fpga-inference-as-a-service.md). Spatial multiplexing puts several systolic-array
accelerators on one board (Sec IV-A, V-C: eight built); temporal multiplexing (SDMC, Sec IV-B) runs
up to six hardware threads per accelerator, each serving one request at batch 1 (Sec V-A). So
tenants = boards x accelerators per board x threads per accelerator (8 x 6 = 48 per board, Sec V-C).

Every published number here is a row of data/seed/rpc_figures.csv (source "EIF seed, Sec ..." or the
Intel datasheet); tests/test_fpga_model.py checks that each constant equals its row.
Units: milliseconds for per-request times (what people type), fractions for slowdown and sparsity.
"""

import math
from typing import TYPE_CHECKING, Optional

from pydantic import BaseModel, ConfigDict, Field

from engine.errors import KneepointError

if TYPE_CHECKING:
    import pandas as pd

# EIF seed, Sec V-C: eight accelerators built, up to six hardware threads each, 48 users per board.
EIF_ACCELERATORS_PER_BOARD = 8
EIF_THREADS_PER_ACCELERATOR = 6
# EIF seed, Table I: the benchmarks' sparsity levels (fraction of zero operands, Sec II-C).
SPARSITY_LOW, SPARSITY_MID, SPARSITY_HIGH = 0.50, 0.60, 0.70
# EIF seed, Sec I / Fig 8: slowdown of a thread against a dedicated accelerator, least and most.
OVERHEAD_LEAST, OVERHEAD_MOST = 0.005, 0.195
# EIF seed, Sec I: board throughput against one dedicated accelerator thread, least and most.
BOARD_GAIN_LEAST, BOARD_GAIN_MOST = 15.7, 40.8
# Intel PAC with Arria 10 GX: PCIe Gen3 x8 (Acceleration Stack quick start, hardware features),
# 66 W total board power (AN 872 power specification).
PAC_A10_PCIE_GEN, PAC_A10_PCIE_LANES, PAC_A10_BOARD_W = 3, 8, 66.0


class FpgaModelError(KneepointError):
    """A question the FPGA model cannot answer; the message names the argument and its value."""


class FpgaBoard(BaseModel):
    """An FPGA board configured as EIF accelerators (the most the published prototype built)."""

    model_config = ConfigDict(frozen=True)

    name: str
    label: str
    max_accelerators: int = Field(ge=1, description="accelerators per board (spatial multiplexing)")
    max_threads: int = Field(ge=1, description="hardware threads per accelerator (temporal multiplexing)")
    pcie_gen: int = Field(ge=3, le=5)
    pcie_lanes: int = Field(ge=1, le=16)
    board_power_w: float = Field(gt=0, description="total board power at full load")
    source: str
    # how the host learns a request is done (engine.stages.rpc completion kinds); not the GPU path's spin: the
    # OPAE driver of the Intel PAC delivers an interrupt the waiting thread sleeps on (fpgaRegisterEvent,
    # FPGA_EVENT_INTERRUPT), so no core is held for the accelerator's time (an assumption: EIF does not say)
    completion: str = Field("blocking", pattern="^(blocking|callback|polling|spin)$")


BOARDS: dict[str, FpgaBoard] = {
    "intel-pac-a10": FpgaBoard(
        name="intel-pac-a10", label="Intel PAC with Arria 10 GX (EIF prototype)",
        max_accelerators=EIF_ACCELERATORS_PER_BOARD, max_threads=EIF_THREADS_PER_ACCELERATOR,
        pcie_gen=PAC_A10_PCIE_GEN, pcie_lanes=PAC_A10_PCIE_LANES, board_power_w=PAC_A10_BOARD_W,
        source="EIF seed, Sec V-A, V-C; Intel PAC A10 quick start guide and AN 872"),
}


def board(name: str) -> FpgaBoard:
    """The board called `name`; an unknown name lists the valid ones."""
    try:
        return BOARDS[name]
    except KeyError:
        raise FpgaModelError(f"{name!r} is not a known FPGA board; valid: {', '.join(sorted(BOARDS))}") from None


# --------------------------------------------------------------------------- tenancy

class Tenancy(BaseModel):
    """How many tenants (concurrent requests, one per hardware thread) a set of boards holds."""

    model_config = ConfigDict(frozen=True)

    boards: int
    accelerators_per_board: int
    threads_per_accelerator: int
    tenants_per_board: int
    tenants: int


def tenancy(boards: int, accelerators_per_board: int, threads_per_accelerator: int) -> Tenancy:
    """tenants = boards x accelerators per board x threads per accelerator (EIF Sec V-C: 1 x 8 x 6 = 48)."""
    for name, v in (("boards", boards), ("accelerators_per_board", accelerators_per_board),
                    ("threads_per_accelerator", threads_per_accelerator)):
        if int(v) != v or v < 1:
            raise FpgaModelError(f"{name} must be a whole number >= 1, got {v!r}")
    per_board = accelerators_per_board * threads_per_accelerator
    return Tenancy(boards=boards, accelerators_per_board=accelerators_per_board,
                   threads_per_accelerator=threads_per_accelerator, tenants_per_board=per_board,
                   tenants=boards * per_board)


# --------------------------------------------------------------------------- slowdown

class SlowdownAnchor(BaseModel):
    """One point the slowdown fit passes through: threads, sparsity, slowdown (fraction), and why."""

    model_config = ConfigDict(frozen=True)

    threads: int
    sparsity: float
    slowdown: float
    origin: str


def _gain_overhead(gain: float, threads: int) -> float:
    """Per-thread slowdown implied by a board throughput gain: gain = accelerators x threads / (1 + o)."""
    return EIF_ACCELERATORS_PER_BOARD * threads / gain - 1.0


#: The four points of the fit. The seed states the extremes of the slowdown (0.5 %, 19.5 %) and of the
#: board throughput gain (15.7x, 40.8x); overhead grows with threads and falls with sparsity (Sec V-B),
#: so the least slowdown is 2 threads at the sparsest level and the most 6 threads at the densest. The
#: gains are the other ends: 15.7x = 8 x 2 / 1.019 (2 threads, densest), 40.8x = 8 x 6 / 1.176
#: (6 threads, sparsest).
EIF_ANCHORS: tuple[SlowdownAnchor, ...] = (
    SlowdownAnchor(threads=2, sparsity=SPARSITY_HIGH, slowdown=OVERHEAD_LEAST, origin="least slowdown, Sec I"),
    SlowdownAnchor(threads=2, sparsity=SPARSITY_LOW, slowdown=_gain_overhead(BOARD_GAIN_LEAST, 2),
                   origin="8 x 2 / 15.7x - 1, Sec I"),
    SlowdownAnchor(threads=6, sparsity=SPARSITY_HIGH, slowdown=_gain_overhead(BOARD_GAIN_MOST, 6),
                   origin="8 x 6 / 40.8x - 1, Sec I"),
    SlowdownAnchor(threads=6, sparsity=SPARSITY_LOW, slowdown=OVERHEAD_MOST, origin="most slowdown, Sec I"),
)


class SlowdownFit(BaseModel):
    """ln slowdown = c0 + c1 x + c2 y + c3 x y, x = ln(threads - 1), y = (s_hi - s) / (s_hi - s_lo)."""

    model_config = ConfigDict(frozen=True)

    c: tuple[float, float, float, float]
    sparsity_lo: float
    sparsity_hi: float
    max_threads: int


def fit_slowdown(anchors: tuple[SlowdownAnchor, ...] = EIF_ANCHORS) -> SlowdownFit:
    """The bilinear-in-log fit through four anchors at two thread counts x two sparsity levels.

    With x = ln(n - 1) and y = 0 at the sparsest and 1 at the densest level, the four corners give the
    four coefficients exactly. Through the EIF anchors: 0.5 % (2 threads, 70 %), 1.9 % (2, 50 %),
    17.6 % (6, 70 %), 19.5 % (6, 50 %); in between, e.g. 4 threads at 60 % sparsity, about 7 %.
    """
    threads = sorted({a.threads for a in anchors})
    levels = sorted({a.sparsity for a in anchors})
    if len(anchors) != 4 or len(threads) != 2 or len(levels) != 2 or threads[0] < 2:
        raise FpgaModelError("the slowdown fit needs four anchors: two thread counts (>= 2) x two sparsity levels")
    at = {(a.threads, a.sparsity): math.log(a.slowdown) for a in anchors}
    (n0, n1), (s_lo, s_hi) = threads, levels
    x1 = math.log(n1 - 1) - math.log(n0 - 1)  # x measured from the lower thread count
    c0, c2 = at[(n0, s_hi)], at[(n0, s_lo)] - at[(n0, s_hi)]
    c1 = (at[(n1, s_hi)] - c0) / x1
    c3 = (at[(n1, s_lo)] - at[(n0, s_lo)] - c1 * x1) / x1
    # shift x to ln(n - 1) so that one thread (x -> -inf) has no slowdown
    x0 = math.log(n0 - 1)
    return SlowdownFit(c=(c0 - c1 * x0, c1, c2 - c3 * x0, c3), sparsity_lo=s_lo, sparsity_hi=s_hi, max_threads=n1)


EIF_FIT = fit_slowdown()


def slowdown(threads: int, sparsity: float, fit: SlowdownFit = EIF_FIT) -> float:
    """Response-time overhead (fraction) of one hardware thread against a dedicated accelerator.

    EIF Sec IV-B, V-B, Fig 8: SDMC co-execution lets `threads` requests share one systolic array; the
    overhead is close to 0 with 2 threads, under 20 % with 6, and falls as the models' sparsity (fraction
    of zero operands) rises. Form: `fit` (see fit_slowdown), with every thread running a model of this
    sparsity. One thread is the dedicated accelerator (0). Sparsity outside the reported levels
    (50-70 %) is held at the nearest level: the fit is not extrapolated (see `clamped_sparsity`).
    """
    if int(threads) != threads or not 1 <= threads <= fit.max_threads:
        raise FpgaModelError(f"threads must be 1..{fit.max_threads} (the most the seed measured), got {threads!r}")
    if not 0 <= sparsity < 1:
        raise FpgaModelError(f"sparsity must be a fraction in [0, 1), got {sparsity!r}")
    if threads == 1:
        return 0.0
    x = math.log(threads - 1)
    y = (fit.sparsity_hi - clamped_sparsity(sparsity, fit)) / (fit.sparsity_hi - fit.sparsity_lo)
    c0, c1, c2, c3 = fit.c
    return math.exp(c0 + c1 * x + c2 * y + c3 * x * y)


def one_multiplier_bound(threads: int, sparsity: float) -> float:
    """Slowdown (fraction) if `threads` share one multiplier, the SDMC reading of EIF Sec IV-B / Fig 5 (drawn for two).

    Each thread offers one multiplication per cycle, effective (no zero operand) with probability 1 - sparsity;
    the multiplier takes one effective multiplication per cycle, so when threads x (1 - sparsity) > 1 it is the
    bottleneck and every thread runs that many times slower: slowdown = max(0, threads x (1 - sparsity) - 1), a
    throughput bound (queueing adds to it). Not the engine's law: at six threads it gives 80-200 % for Table I's
    70-50 % sparsity against Fig 8's < 20 %, and the paper does not say how many multipliers a 4- or 6-thread PE
    has, so the slowdown stays the fit (`slowdown`).
    """
    if int(threads) != threads or threads < 1:
        raise FpgaModelError(f"threads must be a whole number >= 1, got {threads!r}")
    if not 0 <= sparsity < 1:
        raise FpgaModelError(f"sparsity must be a fraction in [0, 1), got {sparsity!r}")
    return max(0.0, threads * (1.0 - sparsity) - 1.0)


def clamped_sparsity(sparsity: float, fit: SlowdownFit = EIF_FIT) -> float:
    """The sparsity the fit is read at: held within the reported levels."""
    return min(max(sparsity, fit.sparsity_lo), fit.sparsity_hi)


# --------------------------------------------------------------------------- service time

class FpgaService(BaseModel):
    """Per-request time of one hardware thread: dedicated time x (1 + slowdown)."""

    model_config = ConfigDict(frozen=True)

    ms_dedicated: float
    threads_per_accelerator: int
    sparsity: float
    slowdown: float
    ms_per_request: float
    sparsity_clamped: bool
    notes: tuple[str, ...]


def service_time(ms_dedicated: float, threads: int, sparsity: float, fit: SlowdownFit = EIF_FIT) -> FpgaService:
    """A thread's per-request time (ms) at batch 1 (EIF Sec V-A: INaaS runs batch 1)."""
    if not ms_dedicated > 0 or not math.isfinite(ms_dedicated):
        raise FpgaModelError(f"ms_per_request must be a positive time in ms, got {ms_dedicated!r}")
    o = slowdown(threads, sparsity, fit)
    clamped = clamped_sparsity(sparsity, fit) != sparsity
    notes = [f"FPGA thread: {ms_dedicated:.4g} ms dedicated x (1 + {o:.1%} slowdown for {threads} threads at "
             f"{sparsity:.0%} sparsity, EIF Sec V-B fit)"]
    if clamped:
        notes.append(f"sparsity {sparsity:.0%} is outside the reported {fit.sparsity_lo:.0%}-{fit.sparsity_hi:.0%}: "
                     f"slowdown read at {clamped_sparsity(sparsity, fit):.0%} (not extrapolated)")
    return FpgaService(ms_dedicated=ms_dedicated, threads_per_accelerator=threads, sparsity=sparsity, slowdown=o,
                       ms_per_request=ms_dedicated * (1 + o), sparsity_clamped=clamped, notes=tuple(notes))


# --------------------------------------------------------------------------- page table

def fpga_tenancy_table(ms_per_request: float, sparsity: float = SPARSITY_MID, board_name: str = "intel-pac-a10",
                       boards: int = 1, accelerators_per_board: Optional[int] = None,
                       threads: Optional[list[int]] = None) -> "pd.DataFrame":
    """Tenants, slowdown, per-request time and throughput for each thread count (EIF Sec V-B, V-C).

    One row per threads-per-accelerator setting (default 1..the board's maximum); throughput is every
    thread busy (tenants / per-request time) and the gain is against one dedicated thread (Sec I).
    """
    b = board(board_name)
    acc = accelerators_per_board if accelerators_per_board is not None else b.max_accelerators
    rows = []
    for n in threads or range(1, min(b.max_threads, EIF_FIT.max_threads) + 1):
        t = tenancy(boards, acc, n)
        svc = service_time(ms_per_request, n, sparsity)
        rows.append({"threads_per_accelerator": n, "accelerators_per_board": acc, "tenants_per_board":
                     t.tenants_per_board, "tenants": t.tenants, "slowdown": svc.slowdown,
                     "ms_per_request": svc.ms_per_request, "throughput_rps": t.tenants / svc.ms_per_request * 1e3,
                     "gain_vs_dedicated_thread": t.tenants / (1 + svc.slowdown)})
    import pandas as pd  # heavy (~0.3 s to import): loaded where a DataFrame is made, not by `evaluate`
    return pd.DataFrame(rows)
