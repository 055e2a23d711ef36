"""Issue 12 item 6: the analytic engine and the simulator agree on small things (one default SLA, ...)."""

from engine.analytic.sla import DEFAULT_SLA_MS, sla_of
from engine.scenario import load_scenario
from engine.sim.workload import mlperf_bound_ms


def test_default_sla_is_one_constant_for_the_analytic_engine_and_the_simulator(store):
    from engine.profiles import ProfileBook

    book = ProfileBook.from_store(store)
    model = next(m for m in sorted(book.model_names) if m not in ("resnet50", "bert-base", "bert-large", "jasper",
                                                                  "quartznet"))
    assert mlperf_bound_ms(model) == DEFAULT_SLA_MS
    sku = book.points.loc[book.points["model"] == model, "sku"].iloc[0]
    sc = load_scenario({"model": model, "gpu": {"sku": sku}, "preprocessing": {"device": "none"}}, book)
    assert sla_of(sc) * 1e3 == mlperf_bound_ms(model)


def test_profiles_list_accepts_a_model_that_exists_only_through_a_user_import(tmp_path, monkeypatch, capsys):
    import argparse

    from engine.cli import main as cli
    from engine.seed.records import LatencyPointRow
    from engine.store import Store

    st = Store(tmp_path / "k.duckdb")
    st.add_rows("latency_points", [LatencyPointRow(
        source="my profiler run", model="my-net", sku="T4-16GB", partition="full", precision="fp16",
        framework="tensorrt", batch=b, mean_ms=1.0 + b, throughput=b / (1.0 + b) * 1e3, kind="measured",
        measured_on="2026-11-24 test host") for b in (1, 2)])
    monkeypatch.setattr(cli, "_store", lambda: st)
    assert cli.cmd_profiles_list(argparse.Namespace(model="my-net", gpu=None, json=False)) == 0
    assert "my-net" in capsys.readouterr().out
    from engine.catalog import UnknownNameError  # the CLI imports it only when a command runs

    with __import__("pytest").raises(UnknownNameError, match="not a name"):
        cli.cmd_profiles_list(argparse.Namespace(model="no-such-net", gpu=None, json=False))
