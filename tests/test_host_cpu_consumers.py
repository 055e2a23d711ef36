"""The host CPU a design uses, per consumer: RPC serving, kernel launch threads, completion wait and
preprocessing each get their own cores (they used to be one 'host_cpu' sum the Design page drew as one bar)."""

from __future__ import annotations

import pytest

from engine.analytic import Context, evaluate
from engine.analytic.pipeline import PREPROCESSING
from engine.charts.design import host_cpu_bar
from engine.presets import DEFAULT_SCENARIO
from engine.stages.rpc import LAUNCH_THREADS, RPC_SERVING


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


@pytest.mark.parametrize("device", ["cpu", "dpu", "gpu", "none"])
def test_each_consumer_has_its_cores_and_they_add_up(ctx, device):
    ev = evaluate({**DEFAULT_SCENARIO, "preprocessing": {"device": device}}, ctx)
    cores = ev.host_cpu.cores
    assert {RPC_SERVING, LAUNCH_THREADS} <= set(cores), cores
    assert "host_cpu" not in cores  # the pooled stage is split, never shown as one lump
    assert sum(cores.values()) == pytest.approx(ev.host_cpu.used)
    assert all(v > 0 for v in cores.values())
    if device == "cpu":  # PREBA's point: preprocessing eats the cores
        assert cores[PREPROCESSING] == max(cores.values())


def test_chart_draws_one_labelled_bar_per_consumer(ctx):
    ev = evaluate(DEFAULT_SCENARIO, ctx)
    fig = host_cpu_bar(ev.host_cpu.cores, ev.host_cpu.free)
    (bar,) = fig.data
    assert sorted(bar.y) == sorted(ev.host_cpu.cores)
    assert all(text.endswith(" cores") for text in bar.text)
    assert "cores" in fig.layout.xaxis.title.text
