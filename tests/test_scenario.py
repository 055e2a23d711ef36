"""The scenario contract: defaults, field-path errors, JSON schema, CLI evaluate."""

import json
import subprocess
import sys

import pytest

from engine.scenario import SCHEMA_ID, ScenarioError, load_scenario, scenario_schema
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def book(store):
    from engine.profiles import ProfileBook

    return ProfileBook.from_store(store)


def test_two_line_scenario_is_valid(book):
    s = load_scenario({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}}, book)
    assert s.schema_ == SCHEMA_ID and s.batching.policy == "fixed" and s.workload.sla.percentile == 99
    assert load_scenario(s.to_json(), book) == s  # JSON round trip


@pytest.mark.parametrize("data, message", [
    ({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB", "layout": ["3g.20gb", "1g.5gb", "5g.20gb"]}},
     "gpu.layout[2]: '5g.20gb' is not a profile of A100-SXM4-40GB; valid: 1g.5gb"),
    ({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB", "layout": ["4g.20gb@0", "3g.20gb@0"]}},
     "gpu.layout: 3g.20gb needs slots 0-3, already used by 4g.20gb@0"),
    ({"model": "resnet51", "gpu": {"sku": "A100-SXM4-40GB"}}, "model: 'resnet51' has no latency profile"),
    ({"model": "resnet50", "gpu": {"sku": "A200"}}, "gpu.sku: 'A200' is not a GPU in the catalogue"),
    ({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}, "rpc": {"preset": "rdma"}}, "rpc.preset"),
    ({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}, "workload": {"arrival": {"rate_rps": -5}}},
     "workload.arrival.rate_rps: Input should be greater than 0 (got -5)"),
    ({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}, "host": {"cpu_cores": 4, "cpu_reserved_cores": 4}},
     "cpu_reserved_cores (4) must be below cpu_cores (4)"),
    ({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB", "count": 2, "layouts": [["7g.40gb"]]}},
     "layouts has 1 entries for count = 2 GPUs"),
    ({"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}, "colour": "red"}, "colour: Extra inputs"),
    ("{not json", "not valid JSON"),
])
def test_errors_name_field_and_value(book, data, message):
    with pytest.raises(ScenarioError) as e:
        load_scenario(data, book)
    assert message in str(e.value)


def test_schema_is_exported():
    schema = scenario_schema()
    assert {"model", "gpu", "batching", "workload", "cost", "schema"} <= set(schema["properties"])


def run(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          input=stdin, timeout=120)


def test_cli_evaluate_json(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB", "layout": ["1g.10gb"] * 7},
                                "workload": {"arrival": {"rate_rps": 2000}}}))
    r = run("evaluate", str(path), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for key in ("stable", "capacity_rps", "bottleneck", "utilization", "latency_ms", "breakdown_ms",
                "sla_bounded_rps", "host_cpu", "cost"):
        assert key in out
    assert set(out["latency_ms"]) == {"mean", "p50", "p95", "p99"}
    assert {"capex_usd", "opex_usd", "tco_usd", "queries_per_usd", "queries_per_joule"} <= set(out["cost"])
    sweep = run("evaluate", str(path), "--sweep-rate", "100:5000:5", "--json")
    assert sweep.returncode == 0 and len(json.loads(sweep.stdout)) == 5


def test_cli_evaluate_errors(tmp_path):
    bad = run("evaluate", "-", stdin='{"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB", "layout": ["9g"]}}')
    assert bad.returncode == 2 and bad.stderr.startswith("error: gpu.layout[0]") and "Traceback" not in bad.stderr
    missing = run("evaluate", str(tmp_path / "nope.json"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    sweep = run("evaluate", str(tmp_path / "nope.json"), "--sweep-rate", "5:1:3")
    assert sweep.returncode == 2 and "LO <= HI" in sweep.stderr
    schema = run("scenario", "schema")
    assert schema.returncode == 0 and json.loads(schema.stdout)["properties"]["model"]


def test_rpc_component_overrides(book, store):
    from engine.analytic import Context, evaluate

    base = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB"}, "preprocessing": {"device": "none"}}
    with pytest.raises(ScenarioError, match="'warp_drive' is not an RPC path component"):
        load_scenario({**base, "rpc": {"components": {"warp_drive": 1}}}, book)
    with pytest.raises(ScenarioError, match="rpc.components"):
        load_scenario({**base, "rpc": {"components": {"base_rtt_us": -1}}}, book)
    ctx = Context.from_store(store)
    slow = evaluate({**base, "rpc": {"components": {"base_rtt_us": 500}}}, ctx)
    fast = evaluate(base, ctx)
    assert slow.latency_ms.mean > fast.latency_ms.mean + 0.4  # the RTT override reaches the latency


def test_query_size_table_is_normalised_and_checked(store):
    from engine.analytic.lengths import query_size_pmf
    from engine.profiles import ProfileBook

    book = ProfileBook.from_store(store)
    base = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB"}}
    s = load_scenario({**base, "workload": {"query_size": {"kind": "table", "table": {"1": 1, "4": 3}}}}, book)
    assert s.workload.query_size.largest == 4
    assert query_size_pmf(s).tolist() == [0.25, 0.0, 0.0, 0.75]
    for table, msg in (({"0": 1}, "query sizes must be 1..4096"), ({"2": 0}, "not all 0"), (None, "needs table")):
        with pytest.raises(ScenarioError, match=msg):
            load_scenario({**base, "workload": {"query_size": {"kind": "table", "table": table}}}, book)


def test_gpu_layouts_per_gpu_and_as_declared():
    from engine.scenario import GpuSpec, HostSpec

    one = GpuSpec(sku="A100-SXM4-80GB", count=2, layout=["3g.40gb", "4g.40gb"])
    assert one.per_gpu_layouts() == [["3g.40gb", "4g.40gb"]] * 2 and one.declared_layouts() == [["3g.40gb", "4g.40gb"]]
    each = GpuSpec(sku="A100-SXM4-80GB", count=2, layouts=[["7g.80gb"], ["1g.10gb"] * 7])
    assert each.per_gpu_layouts() == each.declared_layouts() == [["7g.80gb"], ["1g.10gb"] * 7]
    for whole in (GpuSpec(sku="A100-SXM4-80GB", count=3), GpuSpec(sku="A100-SXM4-80GB", count=3, shares=[50, 50])):
        assert whole.per_gpu_layouts() == [None] * 3 and whole.declared_layouts() == []
    assert HostSpec(cpu_cores=32, cpu_reserved_cores=2).free_cores == 30


def test_one_reading_of_a_pydantic_error():
    """engine.errors.error_path / error_message: the field and the message every loader shows."""
    from pydantic import ValidationError

    from engine.errors import error_message, error_path
    from engine.scenario import HostSpec

    with pytest.raises(ValidationError) as info:
        HostSpec(cpu_cores=4, cpu_reserved_cores=4)
    whole = info.value.errors()[0]
    assert error_path(whole) == "" and error_message(whole).startswith("cpu_reserved_cores (4) must be below")
    with pytest.raises(ValidationError) as info:
        HostSpec(cpu_cores=0)
    field = info.value.errors()[0]
    assert error_path(field) == "cpu_cores" and error_message(field) == field["msg"]
