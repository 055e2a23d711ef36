"""Packing MIG instances into valid placed layouts, and the seed's baseline partitionings (Table I)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.catalog import enumerate_layouts, validate_layout
from engine.cli.main import main
from engine.partition.baselines import (homogeneous, per_gpu, random_layouts, scenario_with_layouts, size_profile,
                                        size_profiles)
from engine.partition.pack import PackingError, multiset_of, pack, parse_items

SEED = "PARIS-ELSA seed"
P4D = "A100-SXM4-40GB"  # the seed's p4d.24xlarge carries A100 40GB GPUs (Sec V)


def _rows(store, item: str):
    df = store.table("rpc_figures")
    return df[df["source"].str.startswith(SEED) & (df["item"] == item)]


def _seed_partition(store, gpu, item: str) -> tuple[dict[str, int], int]:
    """{profile: count} of a PARIS partition the seed reports, and the server's GPU count (Table I)."""
    rows = _rows(store, item)
    ms = {size_profile(gpu, int(m.split("(")[1].split(")")[0])): int(v)
          for m, v in zip(rows["metric"], rows["value"])}
    server = _rows(store, item.split()[0] + " server")
    return ms, int(server["value"].iloc[0])


def _valid(gpu, layouts, multiset):
    for lay in layouts:
        if lay.instances:
            again = validate_layout(gpu, lay.labels())
            assert again.instances == lay.instances
    assert multiset_of(layouts) == {k: v for k, v in multiset.items() if v}


@pytest.mark.parametrize("item", ["MobileNet PARIS partition", "BERT PARIS partition"])
def test_the_seeds_paris_partitions_pack_onto_its_servers(store, catalog, item):
    gpu = catalog.gpu(P4D)
    ms, n_gpus = _seed_partition(store, gpu, item)
    assert len(ms) >= 3
    layouts = pack(gpu, ms, n_gpus)
    assert len(layouts) == n_gpus
    _valid(gpu, layouts, ms)
    fewest = pack(gpu, ms)
    assert len(fewest) <= n_gpus
    _valid(gpu, fewest, ms)
    with pytest.raises(PackingError):
        pack(gpu, ms, len(fewest) - 1)


def test_an_impossible_multiset_is_rejected_with_the_instance_and_reason(catalog):
    gpu = catalog.gpu("A100-SXM4-80GB")
    # within every budget (14 of 14 GPCs, 14 of 16 slots), but a 4g.40gb leaves one 2g.20gb start
    with pytest.raises(PackingError) as e:
        pack(gpu, {"4g.40gb": 2, "2g.20gb": 3}, 2)
    msg = str(e.value)
    assert msg.startswith("2g.20gb #3:") and "any of 2 A100-SXM4-80GB" in msg
    assert msg.endswith("GPUs hold GPU0-1: 4g.40gb@0 2g.20gb@4")  # identical GPUs are listed once
    assert len(pack(gpu, {"4g.40gb": 2, "2g.20gb": 3})) == 3  # three GPUs do it


@pytest.mark.parametrize("ms, gpus, words", [
    ({"3g.40gb": 5}, 2, ["GPC budget exceeded", "15 compute slices", "have 14"]),
    ({"1g.20gb": 4, "1g.10gb": 1}, 1, ["memory slots exceeded", "9 memory slots"]),
    ({"1g.10gb+me": 2}, 1, ["at most 1 per GPU"]),
    ({"5g.40gb": 1}, 1, ["not a profile", "valid: 1g.10gb"]),
    ({"1g.10gb": -1}, 1, ["whole number >= 0"]),
    ({"1g.10gb": 0}, 1, ["nothing to pack"]),
    ({"1g.10gb": 1}, 0, ["gpus", ">= 1"]),
])
def test_bad_requests_say_why(catalog, ms, gpus, words):
    with pytest.raises(PackingError) as e:
        pack(catalog.gpu("A100-SXM4-80GB"), ms, gpus)
    for w in words:
        assert w in str(e.value)


def test_a_gpu_without_mig_is_refused(catalog):
    with pytest.raises(PackingError, match="does not support MIG"):
        pack(catalog.gpu("V100-16GB"), {"1g.5gb": 1})


def test_parse_items_counts_repeats():
    assert parse_items(["3g.40gbx4", "1g.10gb", "1g.10gb", "1g.10gb+mex2"]) == {
        "3g.40gb": 4, "1g.10gb": 2, "1g.10gb+me": 2}


def test_spare_gpus_get_empty_layouts(catalog):
    gpu = catalog.gpu("A100-SXM4-80GB")
    layouts = pack(gpu, {"7g.80gb": 1}, 3)
    assert [len(l.instances) for l in layouts] == [1, 0, 0]


# --------------------------------------------------------------------------- properties

SKUS = ["A100-SXM4-80GB", "A30-24GB", "H100-SXM5-80GB"]


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(SKUS), st.data())
def test_packing_holds_exactly_the_multiset_in_valid_layouts_on_as_few_gpus_as_possible(catalog, sku, data):
    gpu = catalog.gpu(sku)
    names = [p.name for p in gpu.profiles]
    ms = data.draw(st.dictionaries(st.sampled_from(names), st.integers(0, 5), min_size=1))
    if not any(ms.values()):
        ms[names[0]] = 1
    layouts = pack(gpu, ms)
    _valid(gpu, layouts, ms)
    assert all(l.instances for l in layouts)
    if len(layouts) > 1:  # fewest GPUs: one fewer cannot hold them
        with pytest.raises(PackingError):
            pack(gpu, ms, len(layouts) - 1)
    extra = data.draw(st.integers(0, 2))
    spread = pack(gpu, ms, len(layouts) + extra)
    assert len(spread) == len(layouts) + extra
    _valid(gpu, spread, ms)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["A100-SXM4-40GB", "A30-24GB"]), st.data())
def test_every_valid_single_gpu_layout_packs_onto_one_gpu(catalog, sku, data):
    gpu = catalog.gpu(sku)
    lay = data.draw(st.sampled_from(enumerate_layouts(gpu)))
    sub = data.draw(st.lists(st.sampled_from(lay.instances), min_size=1, unique=True))
    ms = dict(Counter(i.profile for i in sub))  # any part of a valid layout is valid too
    assert len(pack(gpu, ms, 1)) == 1


# --------------------------------------------------------------------------- baselines (Table I)


def test_homogeneous_servers_match_table_i(store, catalog):
    gpu = catalog.gpu(P4D)
    n_gpus = int(_rows(store, "MobileNet server")["value"].iloc[0])
    for n in (2, 3, 7):
        want = int(_rows(store, f"MobileNet homogeneous GPU({n})")["value"].iloc[0])
        layouts = homogeneous(gpu, n_gpus, n)
        assert multiset_of(layouts) == {size_profile(gpu, n): want}
    gpu1 = _rows(store, "MobileNet homogeneous GPU(1)")
    want = int(gpu1["value"].iloc[0])  # capped at 24 GPCs, the budget PARIS gets for MobileNet
    assert multiset_of(homogeneous(gpu, n_gpus, 1, max_gpcs=24)) == {size_profile(gpu, 1): want}


def test_size_profiles_are_the_plain_least_memory_profiles(catalog):
    for sku in ("A100-SXM4-40GB", "A100-SXM4-80GB", "A30-24GB", "H200-141GB"):
        gpu = catalog.gpu(sku)
        for n, name in size_profiles(gpu).items():
            p = gpu.profile(name)
            same = [q for q in gpu.profiles if q.compute_slices == n and "+" not in q.name]
            assert p.compute_slices == n and "+" not in name and p.size == min(q.size for q in same)
        assert per_gpu(gpu, size_profiles(gpu)[1]) == gpu.compute_slices
    with pytest.raises(PackingError, match="no 3-GPC partition"):
        size_profile(catalog.gpu("A30-24GB"), 3)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 42))
def test_random_layouts_are_valid_seeded_and_within_budget(catalog, seed, gpus, budget):
    gpu = catalog.gpu("A100-SXM4-80GB")
    budget = min(budget, 7 * gpus)
    a = random_layouts(gpu, gpus, seed, max_gpcs=budget)
    assert [l.labels() for l in a] == [l.labels() for l in random_layouts(gpu, gpus, seed, max_gpcs=budget)]
    assert len(a) == gpus
    assert sum(l.compute_slices_used for l in a) <= budget
    for l in a:
        if l.instances:
            validate_layout(gpu, l.labels())


def test_random_layouts_vary_with_the_seed(catalog):
    gpu = catalog.gpu("A100-SXM4-80GB")
    drawn = {tuple(tuple(l.labels()) for l in random_layouts(gpu, 4, s)) for s in range(10)}
    assert len(drawn) > 1


def test_layouts_become_a_valid_scenario(store, catalog):
    from engine.profiles import ProfileBook
    from engine.scenario import load_scenario

    gpu = catalog.gpu("A100-SXM4-80GB")
    layouts = pack(gpu, {"3g.40gb": 3, "1g.10gb": 2}, 4)
    data = scenario_with_layouts({"model": "resnet50", "gpu": {"sku": gpu.sku}}, layouts, name="x")
    sc = load_scenario(data, ProfileBook.from_store(store))
    assert sc.gpu.count == 2 == len(sc.gpu.layouts)  # two GPUs in use, the empty ones dropped
    with pytest.raises(PackingError, match="scenario's gpu.sku"):
        scenario_with_layouts({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}}, layouts)


# --------------------------------------------------------------------------- CLI


def test_cli_pack_text_and_json(capsys):
    assert main(["partition", "pack", "A100-SXM4-80GB", "1g.10gbx6", "2g.20gbx4", "3g.40gbx2", "4g.40gb"]) == 0
    out = capsys.readouterr().out
    assert out.count("GPU") == 4 and "4g.40gb@0" in out
    assert main(["partition", "pack", "A100-SXM4-80GB", "--gpus", "5", "7g.80gbx2", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["gpus"] == 5 and got["instances"] == {"7g.80gb": 2} and got["layouts"][4] == []


def test_cli_pack_failure_is_one_line_exit_2(capsys):
    assert main(["partition", "pack", "A100-SXM4-80GB", "--gpus", "2", "4g.40gbx2", "2g.20gbx3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: 2g.20gb #3") and err.count("\n") == 1
    assert main(["partition", "pack", "No-Such-GPU", "1g.10gb"]) == 2
    assert "valid:" in capsys.readouterr().err
