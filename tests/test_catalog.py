"""Layout validation (each rejection reason) and maximal-layout enumeration."""

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.catalog import LayoutError, UnknownNameError, enumerate_layouts, validate_layout

A100 = "A100-SXM4-40GB"
CLASSIC = ["1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]


@pytest.fixture(scope="module")
def a100(catalog):
    return catalog.gpu(A100)


def test_catalogue_has_required_gpus(catalog):
    for sku in ["A100-SXM4-40GB", "A100-SXM4-80GB", "A30-24GB", "H100-SXM5-80GB", "H100-PCIe-80GB",
                "H200-141GB", "V100-16GB", "T4-16GB"]:
        gpu = catalog.gpu(sku)
        assert gpu.sm_count > 0 and gpu.tdp_w > 0 and gpu.pcie_gen >= 3
    assert catalog.gpu("A100-SXM4-40GB").sm_count == 108
    assert catalog.gpu("A100-SXM4-40GB").profile("7g.40gb").sm_count == 98  # MIG exposes 98 of 108
    assert not catalog.gpu("T4-16GB").mig_capable


def test_unknown_gpu_lists_valid(catalog):
    with pytest.raises(UnknownNameError, match="valid: .*A100-SXM4-40GB"):
        catalog.gpu("A200")


def test_valid_layout_is_placed(a100):
    layout = validate_layout(a100, ["3g.20gb", "2g.10gb", "2g.10gb"])
    assert layout.labels() == ["2g.10gb@0", "2g.10gb@2", "3g.20gb@4"]
    assert layout.compute_slices_used == 7 and layout.memory_slots_used == 8


def test_explicit_starts_are_kept(a100):
    assert validate_layout(a100, ["3g.20gb@4", "4g.20gb@0"]).labels() == ["4g.20gb@0", "3g.20gb@4"]


@pytest.mark.parametrize("layout, reason", [
    (["4g.20gb@0", "3g.20gb@0"], "3g.20gb needs slots 0-3, already used by 4g.20gb@0"),
    (["4g.20gb", "4g.20gb"], "2 x 4g.20gb requested, but A100-SXM4-40GB allows at most 1"),
    (["1g.5gb"] * 8, "allows at most 7"),
    (["4g.20gb", "2g.10gb", "2g.10gb"], "needs 8 compute slices, but A100-SXM4-40GB has 7"),
    (["5g.20gb"], "'5g.20gb' is not a profile of A100-SXM4-40GB; valid: 1g.5gb"),
    (["3g.20gb@2"], "3g.20gb cannot start at slot 2; valid starts: 0, 4"),
    (["3g.20gb", "3g.20gb", "1g.5gb"], "1g.5gb cannot be placed on A100-SXM4-40GB"),
    (["1g.10gb@6", "3g.20gb@4"], "3g.20gb needs slots 4-7, already used by 1g.10gb@6"),
    (["3g.20gb@x"], "start slot must be an integer"),
    ([], "the layout is empty"),
])
def test_rejections_name_the_conflict(a100, layout, reason):
    with pytest.raises(LayoutError) as e:
        validate_layout(a100, layout)
    assert reason in str(e.value)


def test_non_mig_gpu_is_refused(catalog):
    with pytest.raises(LayoutError, match="does not support MIG"):
        validate_layout(catalog.gpu("V100-16GB"), ["1g.5gb"])
    with pytest.raises(LayoutError, match="does not support MIG"):
        enumerate_layouts(catalog.gpu("T4-16GB"))


def test_classic_profiles_enumerate_nvidia_combinations(a100):
    layouts = {tuple(l.labels()) for l in enumerate_layouts(a100, CLASSIC)}
    assert ("4g.20gb@0", "3g.20gb@4") in layouts
    assert ("3g.20gb@0", "3g.20gb@4") in layouts  # 6 of 7 compute slices, but memory is full
    assert ("7g.40gb@0",) in layouts
    assert tuple(f"1g.5gb@{s}" for s in range(7)) in layouts
    assert ("2g.10gb@0", "2g.10gb@2", "2g.10gb@4", "1g.5gb@6") in layouts
    assert not any("4g.20gb@0" in l and "4g.20gb@4" in l for l in layouts)
    assert len(layouts) == 19


@pytest.mark.parametrize("sku", ["A100-SXM4-40GB", "H100-SXM5-80GB", "A30-24GB"])
def test_enumerated_layouts_are_valid_maximal_and_distinct(catalog, sku):
    gpu = catalog.gpu(sku)
    layouts = enumerate_layouts(gpu)
    labels = [tuple(l.labels()) for l in layouts]
    assert len(labels) == len(set(labels)) > 0
    for layout in layouts:
        assert validate_layout(gpu, layout.labels()).labels() == layout.labels()
        for p in gpu.profiles:  # maximal: adding any instance of any profile fails
            with pytest.raises(LayoutError):
                validate_layout(gpu, layout.labels() + [p.name])


def test_profile_restriction(a100):
    only_small = enumerate_layouts(a100, ["1g.5gb"])
    assert [l.labels() for l in only_small] == [[f"1g.5gb@{s}" for s in range(7)]]
    with pytest.raises(UnknownNameError):
        enumerate_layouts(a100, ["9g.99gb"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(CLASSIC + ["1g.10gb", "1g.5gb+me"]), min_size=1, max_size=8))
def test_validation_agrees_with_enumeration(catalog, profiles):
    """A multiset of profiles is placeable exactly when some maximal layout contains it."""
    gpu = catalog.gpu(A100)
    want = Counter(profiles)
    placeable = any(not (want - Counter(i.profile for i in l.instances)) for l in _all_layouts(gpu))
    try:
        validate_layout(gpu, profiles)
        ok = True
    except LayoutError:
        ok = False
    assert ok == placeable


_CACHE = {}


def _all_layouts(gpu):
    if gpu.sku not in _CACHE:
        _CACHE[gpu.sku] = enumerate_layouts(gpu)
    return _CACHE[gpu.sku]


def test_addable_says_which_profiles_still_fit_and_why_not(catalog):
    from engine.catalog import addable

    gpu = catalog.gpu("A100-SXM4-80GB")
    can = addable(gpu, ["4g.40gb", "2g.20gb"])
    assert can["1g.10gb"] is None and "9 compute slices" in can["3g.40gb"] and "at most 1" in can["4g.40gb"]
    for name, why in can.items():  # agrees with validate_layout
        if why is None:
            validate_layout(gpu, ["4g.40gb", "2g.20gb", name])
        else:
            with pytest.raises(LayoutError):
                validate_layout(gpu, ["4g.40gb", "2g.20gb", name])
