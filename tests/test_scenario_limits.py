"""Every number in the Scenario contract is finite and bounded: NaN, Infinity and 1e308 (which JSON parsers and
float() accept) are refused with a ScenarioError naming the field, before they reach round(), math.exp, a queueing
formula or a price; echoed values are cut short; CPU preprocessing cores that starve the RPC path are refused."""

import json
import math
import types
import typing

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from engine.analytic import Context, build_design, evaluate_design
from engine.errors import ECHO_CHARS
from engine.scenario import Scenario, ScenarioError, load_scenario

GPU_BASE = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}}
FPGA_BASE = {"model": "resnet50", "fpga": {}}
#: sections that only exist in some scenarios, and what makes them present
NEEDS = {"fpga": FPGA_BASE, "service": {**GPU_BASE, "service": {"mean_ms": 1.0}}}


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def _unwrap(annotation):
    """The non-None members of an Optional / Union / Annotated annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) if a is not type(None) for m in _unwrap(a)]
    return [annotation]


def _numeric_fields(model: type[BaseModel], prefix: tuple = ()) -> list[tuple[tuple, str]]:
    """(path, shape) of every number in the model: shape 'number', 'list' (list of numbers), 'pairs' (the
    query-size table) or 'components' (rpc.components); nested specs are walked."""
    out = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        for member in _unwrap(field.annotation):
            origin = typing.get_origin(member)
            if isinstance(member, type) and issubclass(member, BaseModel):
                out += _numeric_fields(member, prefix + (key,))
            elif member in (int, float):
                out.append((prefix + (key,), "number"))
            elif origin is list and _unwrap(typing.get_args(member)[0])[0] in (int, float):
                out.append((prefix + (key,), "list"))
            elif origin is tuple and name == "table":
                out.append((prefix + (key,), "pairs"))
            elif origin is dict and name == "components":
                out.append((prefix + (key,), "components"))
    return sorted(set(out))


NUMERIC_FIELDS = _numeric_fields(Scenario)
BAD_NUMBERS = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, "NaN", "Infinity", "-inf", "1e400", 10 ** 400]),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: abs(x) >= 1e16),
    st.integers().filter(lambda x: abs(x) >= 10 ** 16),
)


def _with_value(path: tuple, shape: str, bad) -> dict:
    """A valid scenario with the number at `path` replaced by `bad`."""
    data = json.loads(json.dumps(NEEDS.get(path[0], GPU_BASE)))
    if path[:2] == ("workload", "arrival") and path[2] == "timestamps":
        data.setdefault("workload", {})["arrival"] = {"kind": "trace"}
    if path[:2] == ("workload", "query_size") and path[2] == "table":
        data.setdefault("workload", {})["query_size"] = {"kind": "table"}
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = {"list": [1.0, bad], "pairs": [[1, 0.5], [2, bad]],
                      "components": {"base_rtt_us": bad}}.get(shape, bad)
    return data


def test_the_walk_finds_the_numbers_the_issue_names():
    paths = {".".join(p) for p, _ in NUMERIC_FIELDS}
    assert {"workload.sla.latency_ms", "cost.gpu_price_usd", "cost.usd_per_kwh", "scheduler.alpha",
            "batching.max_queue_delay_ms", "workload.query_size.mu", "workload.input_len.sigma",
            "fpga.sparsity", "workload.arrival.timestamps", "rpc.components", "service.mean_ms"} <= paths
    assert len(paths) > 40


@given(field=st.sampled_from(NUMERIC_FIELDS), bad=BAD_NUMBERS)
def test_any_non_finite_or_huge_number_is_refused_with_a_scenario_error(ctx, field, bad):
    path, shape = field
    data = _with_value(path, shape, bad)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(data, ctx.book)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 1000
    assert message.split(":")[0].startswith(path[0]) or path[0] == "schema"


@pytest.mark.parametrize("path, value", [
    (("workload", "sla", "latency_ms"), math.nan), (("cost", "gpu_price_usd"), math.inf),
    (("cost", "usd_per_kwh"), 1e308), (("scheduler", "alpha"), 1e308), (("batching", "max_queue_delay_ms"), math.inf),
    (("workload", "query_size", "mu"), 1e308), (("workload", "input_len", "mu"), 800.0),
])
def test_the_issue_s_examples_name_the_field(path, value):
    data = _with_value(path, "number", value)
    with pytest.raises(ScenarioError, match="^" + ".".join(path).replace(".", r"\.") + ": "):
        load_scenario(data)


def test_a_json_scenario_with_nan_and_infinity_literals_is_refused():
    text = json.dumps({**GPU_BASE, "workload": {"sla": {"latency_ms": math.nan}}})
    assert "NaN" in text  # what json.dumps writes, and json.loads reads back as a float
    with pytest.raises(ScenarioError, match=r"workload\.sla\.latency_ms: Input should be a finite number"):
        load_scenario(text)


def test_echoed_values_are_cut_short():
    with pytest.raises(ScenarioError) as caught:
        load_scenario({**GPU_BASE, "name": "x" * 5000})
    assert len(str(caught.value)) < 2 * ECHO_CHARS + 100
    with pytest.raises(ScenarioError) as caught:
        load_scenario({**GPU_BASE, "gpu": {"sku": "A100-SXM4-40GB", "shares": ["y" * 5000]}})
    assert "y" * (ECHO_CHARS + 1) not in str(caught.value)


def test_largest_log_normal_parameters_stay_finite_downstream(ctx):
    """The bounds are tight enough that the analytic engine's exp() and round() never see inf or NaN."""
    data = {"model": "rnnt", "gpu": {"sku": "A100-SXM4-40GB"},
            "workload": {"query_size": {"kind": "lognormal", "mu": 20.0, "sigma": 5.0},
                         "input_len": {"kind": "lognormal", "mu": 20.0, "sigma": 5.0}}}
    if "rnnt" not in ctx.book.model_names:
        data["model"] = "resnet50"
    design = build_design(load_scenario(data, ctx.book), ctx)
    assert math.isfinite(design.q_mean)
    assert math.isfinite(evaluate_design(design, ctx).capacity_rps)


@pytest.mark.parametrize("cores, free", [(30, 30), (40, 30), (8, 8)])
def test_cpu_preprocessing_cores_that_leave_the_rpc_path_none_are_refused(cores, free):
    data = {**GPU_BASE, "host": {"cpu_cores": free + 2, "cpu_reserved_cores": 2},
            "preprocessing": {"device": "cpu", "cores": cores}}
    with pytest.raises(ScenarioError) as caught:
        load_scenario(data)
    message = str(caught.value)
    assert message.startswith(f"preprocessing.cores: {cores} leaves no core for the RPC path")
    assert f"{free} free cores" in message and "host.cpu_cores" in message and f"at most {free - 1}" in message


def test_preprocessing_cores_below_the_free_cores_give_a_working_design(ctx):
    data = {**GPU_BASE, "preprocessing": {"device": "cpu", "cores": 29}}
    e = evaluate_design(build_design(load_scenario(data, ctx.book), ctx), ctx)
    assert e.capacity_rps > 0
    # cores on a DPU or GPU design are not a CPU pool: nothing to refuse
    load_scenario({**GPU_BASE, "preprocessing": {"device": "dpu", "cores": 40}})


@pytest.mark.parametrize("text", ["nan:100:5", "100:inf:5", "100:1e308:5", "-inf:100:5", "100:nan:5", "1:2:100001",
                                  "1e-300:1:5"])
def test_sweep_rate_refuses_non_finite_and_absurd_rates(text):
    import argparse

    from engine.cli.evaluate import _sweep_spec

    with pytest.raises(argparse.ArgumentTypeError, match="need finite 0 < LO <= HI"):
        _sweep_spec(text)
    assert _sweep_spec("100:5000:20") == (100.0, 5000.0, 20)


@pytest.mark.parametrize("rates", [[math.inf], [math.nan], [1e308], [100.0, -1.0], [1e-300]])
def test_the_simulator_refuses_non_finite_and_absurd_rates(ctx, rates):
    from engine.sim import SimError, simulate_design
    from engine.sim.sweep import rate_grid, sweep

    design = build_design(load_scenario(GPU_BASE, ctx.book), ctx)
    with pytest.raises(SimError, match=r"rates must be in \[1e-09, 1e\+07\]"):
        sweep(design, rates, 100, ctx=ctx, workers=1)
    with pytest.raises(SimError, match=r"rate: must be a number of requests/s in \[1e-09, 1e\+07\]"):
        simulate_design(design, 100, ctx=ctx, rate=rates[-1])
    with pytest.raises(SimError, match="need 0 < LO <= HI"):
        rate_grid(1.0, rates[-1], 3)


@pytest.mark.parametrize("alternative, field", [
    ({"batching": [{"policy": "fixed", "max_queue_delay_ms": [1.0, math.nan]}]}, "batching[0].max_queue_delay_ms"),
    ({"scheduler": [{"policy": "elsa", "alpha": math.inf}]}, "scheduler[0].alpha"),
    ({"rpc": [{"preset": "grpc", "link_gbps": 1e308}]}, "rpc[0].link_gbps"),
    ({"preprocessing": [{"device": "cpu", "cores": 40}]}, "preprocessing[0].cores"),
    ({"base": {**GPU_BASE, "cost": {"usd_per_kwh": math.nan}}}, "base.cost.usd_per_kwh"),
    ({"partitions": [{"1g.5gb": 10 ** 30}]}, "partitions[0].1g.5gb"),
])
def test_the_search_space_refuses_non_finite_and_absurd_numbers(ctx, alternative, field):
    from engine.search.space import SearchError, expand, parse_space

    space = {"base": GPU_BASE, **alternative}
    with pytest.raises(SearchError) as caught:
        expand(parse_space(space), ctx.book)
    assert str(caught.value).startswith(field)


def test_a_log_normal_with_no_mass_in_range_is_refused_before_it_becomes_nan():
    """mu -5, sigma 0.5 is inside the Design page's inputs; its mass on 1..32 items is 0, so renormalising the
    discretised distribution gave NaN, which reached round() (engine.analytic.pipeline) as a ValueError."""
    with pytest.raises(ScenarioError, match=r"^workload\.query_size: a log-normal with mu -5 and sigma 0\.5 .*"
                                            r"puts no queries in 1\.\.32 items"):
        load_scenario({**GPU_BASE, "workload": {"query_size": {"kind": "lognormal", "mu": -5, "sigma": 0.5}}})
    with pytest.raises(ScenarioError, match="puts no queries in 1..4 items"):
        load_scenario({**GPU_BASE, "workload": {"query_size": {"kind": "lognormal", "mu": 20, "sigma": 0.01,
                                                                "max_size": 4}}})


@pytest.mark.parametrize("path, value", [
    (("fpga", "ms_per_request"), 1e-300), (("workload", "sla", "latency_ms"), 1e-300),
    (("preprocessing", "ms_per_item"), 5e-324), (("workload", "arrival", "rate_rps"), 1e-300),
    (("workload", "query_size", "sigma"), 1e-300),
])
def test_vanishing_positive_numbers_are_refused(path, value):
    """1e-300 ms per request divided the FPGA service time down to zero (ZeroDivisionError)."""
    with pytest.raises(ScenarioError, match=r"must be at least 1e-09: smaller values vanish"):
        load_scenario(_with_value(path, "number", value))


EXTREMES = {
    "largest SLA": {"workload": {"sla": {"latency_ms": 3_600_000.0}}},
    "largest prices": {"cost": {"gpu_price_usd": 1e9, "server_price_usd": 1e9, "dpu_price_usd": 1e9,
                                "nic_price_usd": 1e9, "usd_per_kwh": 100.0, "years": 20}},
    "largest ELSA weights": {"scheduler": {"policy": "elsa", "alpha": 1000.0, "beta": 1e-9}},
    "largest queue delay": {"batching": {"max_queue_delay_ms": 3_600_000.0}},
    "widest log-normal": {"workload": {"query_size": {"kind": "lognormal", "mu": 20.0, "sigma": 5.0,
                                                      "max_size": 4096}}},
    "slowest preprocessing": {"preprocessing": {"ms_per_item": 3_600_000.0, "image_megapixels": 1000.0}},
    "largest RPC costs": {"rpc": {"components": {"base_rtt_us": 1e9, "transport_us_per_request": 1e9}}},
    "slowest link": {"rpc": {"link_gbps": 1e-9}},
    "fastest FPGA": {"gpu": None, "fpga": {"ms_per_request": 1e-9}},
    "slowest FPGA": {"gpu": None, "fpga": {"ms_per_request": 3_600_000.0, "sparsity": 0.999999}},
}


@pytest.mark.parametrize("name", list(EXTREMES))
def test_valid_extremes_evaluate_to_finite_numbers(ctx, name):
    """The bounds are tight enough that a scenario at them evaluates (no NaN into round(), no exp overflow)."""
    data = {**GPU_BASE, "gpu": {"sku": "A100-SXM4-40GB", "layout": ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]},
            **EXTREMES[name]}
    if data["gpu"] is None:
        del data["gpu"]
    e = evaluate_design(build_design(load_scenario(data, ctx.book), ctx), ctx)
    assert math.isfinite(e.capacity_rps) and math.isfinite(e.sla_bounded_rps)
    assert math.isfinite(e.cost.tco_usd) and e.cost.tco_usd > 0


@pytest.mark.parametrize("low, high", [(5.0, 1.0), (3.0, 3.0)])
def test_a_uniform_input_length_without_width_is_refused_by_name(low, high):
    """An empty or reversed uniform range: the analytic engine read it as a point mass at `low`, the simulator drew
    between the ends; the scenario now refuses it and names both ends."""
    gpu = {"sku": "A100-SXM4-40GB"}
    spec = {"model": "citrinet", "gpu": gpu, "workload": {"input_len": {"kind": "uniform", "low": low, "high": high}}}
    with pytest.raises(ScenarioError, match=rf"input_len.*shortest input \(low, {low:g}\).*\(high, {high:g}\)"):
        load_scenario(spec)
    load_scenario({**spec, "workload": {"input_len": {"kind": "uniform", "low": low, "high": low + 1}}})
