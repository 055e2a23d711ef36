"""Partitioning policies on a seed-like server, and PARIS + ELSA against GPU(max) + FIFS, simulated.

Seed-like (PARIS/ELSA seed Sec V): ResNet-50 on four A100s, log-normal query sizes 1..32 arriving
as a Poisson process, each query served at its own size (no batching across queries), SLA = 1.5 x
the latency of the largest batch on GPU(7), judged at the 95th percentile (Fig 11's tail).
Host stages are left out (preprocessing none, local RPC) so the GPUs decide, as in the seed's
frontend-unbound design points.
"""

from __future__ import annotations

import json

import pytest

from engine.analytic import Context, build_design, sla_bounded_rate
from engine.cli.main import main
from engine.partition.bounded import sim_bounded_rate
from engine.partition.pack import PackingError
from engine.partition.paris import MAX_BATCH
from engine.partition.plan import SLA_MULTIPLE, fit, plan, seed_sla_ms
from engine.scenario import load_scenario
from engine.vocab import PartitionPolicy

SKU = "A100-SXM4-80GB"
SEED = "PARIS-ELSA seed"


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


@pytest.fixture(scope="module")
def base(ctx) -> dict:
    return {"name": "seed-like", "model": "resnet50", "gpu": {"sku": SKU, "count": 4},
            "batching": {"policy": "none"}, "preprocessing": {"device": "none"}, "rpc": {"preset": "local"},
            "workload": {"query_size": {"kind": "lognormal", "mu": 1.0, "sigma": 1.0, "max_size": MAX_BATCH},
                         "sla": {"latency_ms": seed_sla_ms(ctx.book, "resnet50", SKU), "percentile": 95}}}


def test_sla_default_is_the_seed_figure(store, ctx):
    df = store.table("rpc_figures")
    row = df[df["source"].str.startswith(SEED) & (df["item"] == "SLA target")]
    assert SLA_MULTIPLE == float(row["value"].iloc[0])
    gpu7 = ctx.book.predict("resnet50", SKU, "7g.80gb", MAX_BATCH).mean_s * 1e3
    assert seed_sla_ms(ctx.book, "resnet50", SKU) == pytest.approx(SLA_MULTIPLE * gpu7)


def test_paris_plus_elsa_beats_gpu_max_plus_fifs_in_simulation(ctx, base):
    # the seed's Sec VI-C: the wider the log-normal, the more heterogeneity pays (Fig 13a); with mu = sigma
    # = 1 ResNet-50's best homogeneous size, GPU(2), comes within a few % of PARIS + ELSA (the seed, too,
    # reports only a modest gain for ResNet), so the comparison uses a wider distribution
    wide = {**base, "workload": {**base["workload"],
                                 "query_size": {"kind": "lognormal", "mu": 1.5, "sigma": 1.5, "max_size": MAX_BATCH}}}
    gmax = plan("gpu-max", wide, ctx)
    par = plan("paris", wide, ctx)
    assert len(par.instances) >= 3  # heterogeneous
    assert gmax.bounded_rps and max(gmax.bounded_rps.values()) > 0
    # ELSA's slack test uses mean (profiled) service times while the simulator jitters them, so the
    # predictor gets a margin alpha > 1: the seed tunes alpha and beta to the server (Sec IV-C, eq. 2)
    elsa = {**par.scenario, "scheduler": {"policy": "elsa", "alpha": 1.5, "beta": 1.0}}
    fifs = {**gmax.scenario, "scheduler": {"policy": "fifs"}}
    b_paris = sim_bounded_rate(elsa, ctx, n_requests=20_000, seed=3)
    b_max = sim_bounded_rate(fifs, ctx, n_requests=20_000, seed=3)
    assert b_max.rate_rps > 0
    assert b_paris.rate_rps > 1.2 * b_max.rate_rps, (b_paris.probes, b_max.probes)  # 1.35x at seed 3
    # the probe below the answer met the SLA; the answer is within capacity
    assert all(met for r, _, met in b_paris.probes if r <= b_paris.rate_rps)
    assert b_paris.rate_rps < b_paris.capacity_rps


def test_gpu_max_is_the_best_homogeneous_size(ctx, base):
    gmax = plan("gpu-max", base, ctx)
    best = max(gmax.bounded_rps, key=gmax.bounded_rps.get)
    (profile,) = gmax.instances
    assert best == f"GPU({int(profile[0])})"
    design = build_design(load_scenario(gmax.scenario, ctx.book), ctx)
    assert sla_bounded_rate(design) == pytest.approx(gmax.bounded_rps[best])


@pytest.mark.parametrize("policy", [p.value for p in PartitionPolicy if p != PartitionPolicy.GPU_MAX])
def test_every_policy_gives_valid_layouts_within_the_budget(ctx, base, policy):
    p = plan(policy, base, ctx, max_gpcs=24, seed=5)
    sc = load_scenario(p.scenario, ctx.book)  # validates every layout against the catalogue
    assert sc.gpu.count == p.gpus_used <= 4
    assert p.gpcs_used <= 24
    if policy == "paris":
        assert p.paris is not None and p.paris.total_gpcs == 24


def test_unknown_policy_lists_the_valid_ones(ctx, base):
    with pytest.raises(PackingError, match="valid: gpu1, gpu2, gpu3, gpu4, gpu7, gpu-max, random, paris"):
        plan("best", base, ctx)


def test_fit_repairs_what_placement_forbids(catalog):
    gpu = catalog.gpu(SKU)
    # within the GPC budget (20 + 4 of 28) but only one 4g.40gb fits per A100
    targets = {"4g.40gb": 5.0, "1g.10gb": 4.0}
    layouts, notes = fit(gpu, {"4g.40gb": 5, "1g.10gb": 4}, 4, targets, 28)
    counts = {}
    for lay in layouts:
        for i in lay.instances:
            counts[i.profile] = counts.get(i.profile, 0) + 1
    assert counts["4g.40gb"] == 4 and counts["1g.10gb"] >= 4
    assert sum(l.compute_slices_used for l in layouts) <= 28
    assert any("dropped one 4g.40gb" in n for n in notes)


def test_cli_plan_json(tmp_path, capsys, base):
    path = tmp_path / "sc.json"
    path.write_text(json.dumps(base))
    assert main(["partition", "plan", str(path), "--policy", "paris", "--max-gpcs", "24", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"] == "paris" and out["gpcs_used"] <= 24 and out["scenario"]["gpu"]["layouts"]
    assert main(["partition", "plan", str(path), "--policy", "gpu3"]) == 0
    assert "gpu3:" in capsys.readouterr().out
