"""Issue 12 item 6: the analytic engine and the simulator agree on small things (one default SLA, ...)."""

from engine.analytic.design import DEFAULT_SLA_MS, sla_of
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
