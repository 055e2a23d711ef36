"""The inversions that say why a GPU-primitives entry misses (engine.reproduce.implied), and the reasons that quote
them: each inversion undoes the engine's forward law, and the quoted numbers are the engine's."""

import pytest

from engine.profiles.service import ESTIMATED
from engine.profiles.slicelaw import SliceFit, slice_latency
from engine.reproduce import gpu_primitives as prim
from engine.reproduce._common import evaluate
from engine.reproduce.implied import implied_copy_cpu_s_per_item, implied_half_saturation_batch
from engine.reproduce.registry import entries
from engine.reproduce.runner import run_entry
from engine.stages.rpc_calibration import CPU_HZ, model_figures
from engine.tenancy import latency_vs_gpu_pct, plan_multimodel
from engine.tenancy.errors import TenancyError

BY_ID = {e.id: e for e in entries("gpu-primitives")}


@pytest.fixture(scope="module")
def ctx(store):
    from engine.analytic import Context

    return Context.from_store(store)


@pytest.mark.parametrize("t_fixed_s, T, batch, share", [(3.4e-3, 1072.0, 1, 0.25), (3.4e-3, 1072.0, 8, 0.2),
                                                        (0.02, 150.0, 8, 0.5), (1e-4, 5000.0, 32, 0.1)])
def test_the_half_saturation_batch_undoes_the_slice_law(t_fixed_s, T, batch, share):
    fit = SliceFit(t_fixed_s=t_fixed_s, saturated_throughput=T, residuals=(), rms_rel_error=0.0)
    ratio = float(slice_latency(fit, batch, share) / slice_latency(fit, batch, 1.0))
    assert implied_half_saturation_batch(batch, share, ratio) == pytest.approx(fit.half_saturation_batch)


@pytest.mark.parametrize("ratio", [1.0, 0.9, 4.01])
def test_a_ratio_the_slice_law_cannot_give_is_refused(ratio):
    with pytest.raises(TenancyError, match="no slice-law"):
        implied_half_saturation_batch(1, 0.25, ratio)


@pytest.mark.parametrize("gpu_s, batch, d, c", [(0.033, 32, 5e-6, 130e-6), (0.003, 32, 5e-6, 2e-3), (0.0, 8, 1e-6, 1e-4)])
def test_the_copy_cost_undoes_the_run_to_completion_thread(gpu_s, batch, d, c):
    dma_rps, copy_rps = batch / (gpu_s + batch * d), batch / (gpu_s + batch * c)
    assert implied_copy_cpu_s_per_item(copy_rps, dma_rps, d) == pytest.approx(c)


def test_the_gpu_dma_reason_quotes_the_engines_own_numbers(ctx):
    row = run_entry(BY_ID["prim-gpudma-alexnet"], ctx)
    dma = evaluate(ctx, prim._dma_scenario("alexnet", "gpu-dma"))
    figs = model_figures()
    d = figs["cycles_gpudma"] / 8 / CPU_HZ
    shared = 1.0 / (dma.capacity_rps / row.paper_value)  # one gather thread for every GPU: c = 1 / target
    assert dma.bottleneck == "rpc"  # Sec IV-A's 4 x 10 GbE carries fewer images than the GPUs run with GPU-DMA
    assert f"{dma.capacity_rps:,.0f} images/s" in row.mechanism
    assert f"or {shared * 1e6:,.0f} us" in row.mechanism
    assert shared == pytest.approx(implied_copy_cpu_s_per_item(dma.capacity_rps / row.paper_value, 1 / d, d))


def test_the_share_reason_quotes_the_curves_half_saturation_batch(ctx):
    row = run_entry(BY_ID["prim-fig9-b1-latency"], ctx)
    fit = ctx.book.curve(prim.MODEL, prim.SKU, "mps:50").fit
    assert f"the DLE curve's is {fit.half_saturation_batch:.1f} images" in row.mechanism
    # the entry's own value is the slice law's forward answer at that curve's h: the inversion gives it back
    assert implied_half_saturation_batch(1, 0.25, 1 + row.kneepoint / 100) == pytest.approx(
        fit.half_saturation_batch, rel=0.02)


def test_the_estimated_curve_trial_is_recomputed_not_typed_in(ctx):
    row = run_entry(BY_ID["prim-multimodel-resnet50"], ctx)
    curve = latency_vs_gpu_pct(ctx.book, prim.MODEL, prim.SKU, batch=8, framework=ESTIMATED, precision="fp16")
    mm = plan_multimodel(curve, prim.DEADLINE_MS)
    assert f"Multi-Model {mm.speedup:.2f}x with {mm.best.instances} instances" in row.mechanism
