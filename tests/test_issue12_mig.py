"""Issue 12 item 4: MIG aggregates respect the whole GPU (best batch under the SLA, all-slices contention)."""

import math

import numpy as np
import pytest

from engine.analytic import Context, evaluate
from engine.analytic.bestbatch import best_use
from engine.catalog import MigContentionRow, all_slices_factor, busy_slices_factor, contention_rows, mig_contention
from engine.scenario import ScenarioError, load_scenario

SKU = "A100-SXM4-80GB"


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def seven_1g(model, **gpu):
    return {"model": model, "gpu": {"sku": SKU, "layout": ["1g.10gb"] * 7, **gpu}, "preprocessing": {"device": "none"}}


def test_contention_factor_is_the_published_mlperf_pair():
    # v1.1 NVIDIA Triton Offline: one 1g.10gb slice 502.111/s, 56 slices (8 GPUs x 7) 25677.1/s
    c = mig_contention(SKU, "bert-large")
    assert math.isclose(c.factor, 25677.1 / 56 / 502.111) and c.slices == 7 and "MIG_{1x1g;56x1g}" in c.source
    assert all(0 < all_slices_factor(r) <= 1 for r in contention_rows())


def test_a_family_without_its_own_pair_borrows_the_most_conservative_one_and_says_so():
    c = mig_contention("H100-SXM5-80GB", "resnet50")
    assert c.factor == min(all_slices_factor(r) for r in contention_rows()) and "none published for H100" in c.basis
    assert mig_contention(SKU, "mobilenet").factor == min(all_slices_factor(r) for r in contention_rows()
                                                          if r.family == "A100")


def test_busy_slices_factor_is_one_alone_and_the_published_value_with_all_busy():
    assert busy_slices_factor(0.9, 1, 7) == 1.0
    assert busy_slices_factor(0.9, 7, 7) == pytest.approx(0.9)
    assert 0.9 < busy_slices_factor(0.9, 3, 7) < 1.0


def test_contention_slows_every_slice_and_one_turns_it_off(ctx):
    on = evaluate(seven_1g("bert-large"), ctx)
    off = evaluate(seven_1g("bert-large", mig_contention=1.0), ctx)
    factor = mig_contention(SKU, "bert-large").factor
    assert on.stage_capacity_rps["gpu"] == pytest.approx(off.stage_capacity_rps["gpu"] * factor, rel=1e-4)  # the RPC path's per-batch 5 us is not slowed
    assert any("all-slices contention" in n for n in on.notes)
    assert not any("all-slices contention" in n for n in off.notes)


def test_contention_is_a_bounded_scenario_parameter(ctx):
    with pytest.raises(ScenarioError, match="mig_contention"):
        load_scenario(seven_1g("resnet50", mig_contention=1.5), ctx.book)
    with pytest.raises(ScenarioError, match="mig_contention"):
        load_scenario(seven_1g("resnet50", mig_contention=0.0), ctx.book)


def test_whole_gpu_has_no_contention(ctx):
    ev = evaluate({"model": "resnet50", "gpu": {"sku": SKU}, "preprocessing": {"device": "none"}}, ctx)
    assert ev.mig_vs_whole is None and not any("contention" in n for n in ev.notes)


@pytest.mark.parametrize("model", ["resnet50", "bert-large"])
def test_seven_1g_slices_stay_below_the_whole_gpu_at_their_best_batches(ctx, model):
    # before: BERT-large 7 x 1g at the knee = 311 req/s against 275 for the whole GPU; MLPerf v1.1 has
    # 7 x 1g at 0.93 (ResNet-50) and 0.91 (BERT) of the whole A100-SXM-80GB
    check = evaluate(seven_1g(model), ctx).mig_vs_whole
    assert check is not None and check.ratio < 1.0 and not check.exceeds_whole
    assert all(u.batch >= 2 for u in check.partitions)  # slices are compared at useful batches
    assert any(n.startswith("at the batch each can best use under the SLA") for n in
               evaluate(seven_1g(model), ctx).notes)
    assert check.whole.batch > evaluate({"model": model, "gpu": {"sku": SKU}, "preprocessing": {"device": "none"}},
                                        ctx).partitions[0].batch_max  # the knee is not a throughput cap


def _partition(gpu, label, mean_ms):
    from engine.accelerator_side import Partition

    mean = np.asarray(mean_ms, dtype=float) * 1e-3
    return Partition(gpu_index=gpu, name=label, label=label, provenance="derived", max_batch=len(mean), knee_batch=1,
                     knee_time_s=float(mean[0]), mean_s=mean, tail_s=mean)


def test_a_layout_beating_the_whole_gpu_is_flagged():
    from engine.analytic.bestbatch import compare_with_whole, flag_note

    whole = _partition(0, "full", [1.0, 1.8])  # best: 2 items in 1.8 ms
    slices = tuple(_partition(0, f"s{i}", [2.0, 3.0]) for i in range(2))  # 2 x 667/s > 1111/s
    check = compare_with_whole(slices, whole, sla_s=0.01)
    assert check.exceeds_whole and check.ratio == pytest.approx((2 / 3e-3) * 2 / (2 / 1.8e-3))
    assert "MLPerf MIG" in flag_note(check)
    fine = compare_with_whole(slices[:1], whole, sla_s=0.01)
    assert not fine.exceeds_whole and flag_note(fine) is None


def test_best_use_picks_the_fastest_batch_within_the_sla():
    mean = np.array([1.0, 1.5, 2.0, 4.0]) * 1e-3
    u = best_use("x", mean, mean * 1.1, sla_s=0.0045)
    assert u.batch == 3 and u.items_per_s == pytest.approx(3 / 2e-3)
    assert best_use("x", mean, mean, sla_s=1e-4).batch == 0


def test_a_bad_contention_row_names_its_line(tmp_path):
    from engine.seed.reader import SeedError

    p = tmp_path / "mig_contention.csv"
    p.write_text("source,family,model,benchmark,scenario,slices,one_slice_samples_per_s,all_slices_samples_per_s,"
                 "gpus,note\ns,A100,resnet50,resnet50,Offline,1,1,1,1,\n")
    with pytest.raises(SeedError, match="line 2"):
        contention_rows.__wrapped__(p)
    assert MigContentionRow  # the row model is public for the curation checks
