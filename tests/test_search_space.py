"""engine.search.space: a declared search space, its validation messages and the grid it spans."""

import json

import pytest

from engine.scenario import load_scenario
from engine.search import SearchError, expand, parse_space
from engine.search.space import HARD_MAX_DESIGNS

SKU = "A100-SXM4-40GB"
BASE = {"model": "resnet50", "gpu": {"sku": SKU}, "workload": {"arrival": {"rate_rps": 400}}}


@pytest.fixture(scope="module")
def book(store):
    from engine.profiles import ProfileBook

    return ProfileBook.from_store(store)


def grid_of(book, **axes):
    return expand(parse_space({"base": BASE, **axes}), book)


def error_of(book, data) -> str:
    with pytest.raises(SearchError) as e:
        expand(parse_space(data), book)
    return str(e.value)


def test_axes_multiply_and_list_values_expand(book):
    g = grid_of(book, layouts=[["7g.40gb"], ["3g.20gb", "3g.20gb"]], preprocessing=["cpu", "none"],
                batching=[{"policy": "fixed", "max_batch": [8, 16], "max_queue_delay_ms": [1, 2]}, "preba"],
                scheduler=["fifs", {"policy": "elsa", "alpha": [0.5, 1.5]}])
    assert g.shape == (2, 2, 1, 5, 3) and g.size == 60
    labels = [g.label(i) for i in range(g.size)]
    assert len(set(labels)) == g.size  # every design is a different combination
    combos = {tuple(o.source + o.label for o in g.options(i)) for i in range(g.size)}
    assert len(combos) == g.size
    with pytest.raises(IndexError):
        g.options(g.size)


def test_design_scenarios_are_valid_and_carry_their_options(book):
    g = grid_of(book, layouts=[["4g.20gb", "3g.20gb"]], rpc=["local", {"preset": "grpc", "link_gbps": 25}],
                batching=[{"policy": "fixed", "max_batch": 8, "max_queue_delay_ms": 2}])
    for i in range(g.size):
        sc = g.scenario(i)
        again = load_scenario(sc.to_json(), book)  # what a candidate's scenario JSON gives back
        assert again == sc
        assert sc.batching.max_batch == 8 and sc.gpu.layout == ["4g.20gb@0", "3g.20gb@4"]
    assert {g.scenario(i).rpc.preset.value for i in range(g.size)} == {"local", "grpc"}
    assert g.scenario(1).rpc.link_gbps == 25


def test_all_layouts_are_the_maximal_layouts(book):
    from engine.catalog import enumerate_layouts

    g = grid_of(book, layouts="all")
    want = {tuple(lay.labels()) for lay in enumerate_layouts(book.catalog.gpu(SKU))}
    assert {tuple(o.part.layout) for o in g.axes[0]} == want


def test_partitions_are_packed_and_the_unpackable_skipped(book):
    g = grid_of(book, partitions=[{"2g.10gb": 3, "1g.5gb": 1}, {"3g.20gb": 3}])
    assert len(g.axes[0]) == 1
    layout = g.scenario(0).gpu.layout
    assert sorted(e.split("@")[0] for e in layout) == ["1g.5gb", "2g.10gb", "2g.10gb", "2g.10gb"]
    assert any(n.startswith("partitions[1]") and "skipped" in n for n in g.notes)


def test_a_partition_equal_to_a_layout_is_evaluated_once(book):
    g = grid_of(book, layouts=[["1g.5gb"] * 7], partitions=[{"1g.5gb": 7}])
    assert len(g.axes[0]) == 1 and any("repeats layouts[0]" in n for n in g.notes)


def test_partitions_over_two_gpus_give_per_gpu_layouts(book):
    base = {**BASE, "gpu": {"sku": SKU, "count": 2}}
    g = expand(parse_space({"base": base, "partitions": [{"3g.20gb": 4}]}), book)
    gpu = g.scenario(0).gpu
    assert gpu.count == 2 and [len(lay) for lay in gpu.layouts] == [2, 2]


def test_json_text_loads(book):
    space = parse_space(json.dumps({"schema": "kneepoint.search/1", "base": BASE, "scheduler": ["jsq"]}))
    assert expand(space, book).scenario(0).scheduler.policy.value == "jsq"


@pytest.mark.parametrize("space, words", [
    ({"base": {**BASE, "gpu": {"sku": "A200"}}}, "base.gpu.sku: 'A200' is not a GPU"),
    ({"base": BASE, "layouts": "some"}, "layouts: give \"all\""),
    ({"base": BASE, "layouts": [["7g.40gb"], ["5g.20gb"]]}, "layouts[1][0]: '5g.20gb' is not a profile"),
    ({"base": BASE, "layouts": [["4g.20gb@0", "3g.20gb@0"]]}, "layouts[0]: 3g.20gb needs slots 0-3"),
    ({"base": BASE, "batching": ["preba", {"policy": "fixed", "max_batch": 0}]}, "batching[1].max_batch:"),
    ({"base": BASE, "preprocessing": [{"device": "fpga"}]}, "preprocessing[0].device:"),
    ({"base": BASE, "rpc": ["grpc", 5]}, "rpc[1]: an alternative is a preset name"),
    ({"base": BASE, "scheduler": []}, "scheduler: give a non-empty list"),
    ({"base": BASE, "partitions": [{"1g.9gb": 7}]}, "partitions[0].1g.9gb: '1g.9gb' is not a profile"),
    ({"base": BASE, "partitions": [{"1g.5gb": 0}]}, "partitions[0].1g.5gb: the count must be"),
    ({"base": BASE, "partitions": [{"7g.40gb": 2}]}, "partitions: no multiset could be packed"),
    ({"base": BASE, "layout": [["7g.40gb"]]}, "layout: Extra inputs are not permitted"),
    ({"base": BASE, "max_designs": HARD_MAX_DESIGNS + 1}, "max_designs: Input should be less than or equal"),
    ({"layouts": "all"}, "base: Field required"),
    ({"base": {**BASE, "gpu": {"sku": "T4-16GB"}}, "layouts": "all"}, "layouts: T4-16GB does not support MIG"),
])
def test_invalid_spaces_name_the_field(book, space, words):
    assert words in error_of(book, space)


def test_the_size_limit_is_stated(book):
    msg = error_of(book, {"base": BASE, "layouts": "all", "preprocessing": ["cpu", "none", "dpu"],
                          "max_designs": 100})
    assert "max_designs:" in msg and "over the limit of 100" in msg and f"at most {HARD_MAX_DESIGNS:,}" in msg


def test_not_json_is_a_clear_error():
    with pytest.raises(SearchError, match="not valid JSON"):
        parse_space("{base: 1")
    with pytest.raises(SearchError, match="a search space is a JSON object"):
        parse_space("[1, 2]")


def test_layouts_with_the_same_slices_are_twins(book):
    from collections import Counter

    g = grid_of(book, layouts="all", preprocessing=["cpu", "none"])
    twins = g.twins()
    slices = [Counter(e.split("@")[0] for e in g.scenario(i).gpu.layout) for i in range(g.size)]
    for i, rep in enumerate(twins):
        assert rep <= i and twins[rep] == rep  # the first of its set, which represents itself
        assert slices[rep] == slices[i] and g.options(rep)[1:] == g.options(i)[1:]
    # every set of twins has one representative: no two representatives share their slices and other options
    reps = sorted(set(twins))
    assert len({(tuple(sorted(slices[r].items())), g.label(r).split(' | ', 1)[1]) for r in reps}) == len(reps) < g.size


def test_other_gpu_sections_are_never_twins(book):
    g = grid_of(book, layouts=[["3g.20gb@0", "3g.20gb@4"], ["4g.20gb", "3g.20gb"]],
                partitions=[{"3g.20gb": 2}])  # the packed multiset equals layouts[0]: deduplicated, not a twin
    assert g.twins() == list(range(g.size))
