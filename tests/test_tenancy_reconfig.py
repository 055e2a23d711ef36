"""Reconfiguration downtime with and without a standby instance (GPU runtime primitives seed, Sec III, V-C)."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.tenancy import RESTART_LOAD_S, STANDBY_SWITCH_S, TenancyError, reconfiguration

UNIT_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


def _figure(store, item: str, metric: str = "downtime") -> float:
    df = store.table("rpc_figures")
    row = df[(df["category"] == "reconfiguration") & (df["item"] == item) & (df["metric"] == metric)]
    assert len(row) == 1, f"rpc_figures needs one row reconfiguration/{item!r}/{metric}"
    value, unit = float(row["value"].iloc[0]), row["unit"].iloc[0]
    return value * UNIT_S[unit] if unit in UNIT_S else value


def test_defaults_are_the_seed_rows(store):
    assert RESTART_LOAD_S == _figure(store, "ResNet-50 reload at the new GPU% without overlap")
    assert math.isclose(STANDBY_SWITCH_S, _figure(store, "ResNet-50 switch-over with Overlapped-Execution"))
    lo = _figure(store, "MPS GPU% change by restarting the process", "downtime min")
    hi = _figure(store, "MPS GPU% change by restarting the process", "downtime max")
    assert lo <= RESTART_LOAD_S <= hi  # Fig 8's 3 s within Sec III's 2-5 s
    assert STANDBY_SWITCH_S < lo / 1000  # "a few hundred microseconds compared to seconds"


def test_fig8_change_priced_at_its_rates(store):
    before = _figure(store, "ResNet-50 request rate before the change", "rate")
    after = _figure(store, "ResNet-50 request rate after the change", "rate")
    r = reconfiguration(after, old_capacity_rps=before)
    assert r.restart.downtime_s == RESTART_LOAD_S and r.standby.downtime_s == STANDBY_SWITCH_S
    assert math.isclose(r.restart.requests_affected, after * RESTART_LOAD_S)  # nothing served while it loads
    assert math.isclose(r.standby.requests_in_downtime, after * STANDBY_SWITCH_S)  # only the switch-over
    assert math.isclose(r.standby.backlog_during_load, (after - before) * RESTART_LOAD_S)  # old share keeps serving
    assert r.requests_saved > 0
    assert len(r.table()) == 2


@given(st.floats(0, 1e5), st.floats(1e-3, 30), st.floats(0, 1e-3))
def test_standby_without_backlog_loses_only_the_switch_over(rate, load, switch):
    r = reconfiguration(rate, load, switch)
    assert r.standby.backlog_during_load == 0
    assert math.isclose(r.standby.requests_affected, rate * switch, abs_tol=1e-9)
    assert r.standby.requests_affected <= r.restart.requests_affected + 1e-9


@given(st.floats(1, 1e4), st.floats(0, 2e4))
def test_no_backlog_when_the_old_share_keeps_up(rate, capacity):
    r = reconfiguration(rate, old_capacity_rps=capacity)
    assert (r.standby.backlog_during_load == 0) == (capacity >= rate)


@pytest.mark.parametrize("args, field", [((-1,), "rate_rps"), ((10, 0), "load_s"), ((10, 3, -1e-6), "switch_s"),
                                         ((10, 3, 1e-4, -5), "old_capacity_rps")])
def test_bad_input_is_named(args, field):
    with pytest.raises(TenancyError, match=field):
        reconfiguration(*args)
