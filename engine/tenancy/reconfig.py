"""Changing an instance's GPU%: downtime and requests affected, with and without a standby instance.

GPU runtime primitives seed:
- Sec III-1: an MPS GPU% is fixed for a process's life; changing it "simplistically" means a new
  process and 2-5 s of downtime with the GPU idle.
- Sec V-C (Fig 8, ResNet-50 on V100, 40% -> 50% as the rate goes 520 -> 680 req/s): restarting
  takes 3 s to load, during which no request is served; with Overlapped-Execution a standby
  (shadow) instance loads at the new GPU% while the active one keeps serving, then takes over after
  about 200 us of downtime (Sec VII rounds it to 100 us).
The defaults below are those figures (rows of data/seed/rpc_figures.csv, category 'reconfiguration').
Times in seconds, rates in requests/s, counts in requests.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict

from engine.tenancy.errors import non_negative, positive

RESTART_LOAD_S = 3.0  # Sec V-C Fig 8: ResNet-50 takes 3 s to load at the new GPU% (rpc_figures)
STANDBY_SWITCH_S = 200e-6  # Sec V-C Fig 8: downtime of the switch-over with Overlapped-Execution (rpc_figures)


class ReconfigCase(BaseModel):
    """One way of changing the GPU%."""

    model_config = ConfigDict(frozen=True)

    mode: Literal["restart", "standby"]
    downtime_s: float  # nothing is served
    requests_in_downtime: float  # rate x downtime: lost, or delayed if the client retries / queues
    backlog_during_load: float  # standby only: arrivals beyond the old share's capacity while the shadow loads
    requests_affected: float  # in downtime + backlog

    def row(self) -> dict:
        return self.model_dump()


class Reconfiguration(BaseModel):
    model_config = ConfigDict(frozen=True)

    rate_rps: float
    load_s: float
    switch_s: float
    old_capacity_rps: Optional[float]
    restart: ReconfigCase
    standby: ReconfigCase

    @property
    def requests_saved(self) -> float:
        return self.restart.requests_affected - self.standby.requests_affected

    def table(self) -> list[dict]:
        return [self.restart.row(), self.standby.row()]


def restart_case(rate_rps: float, load_s: float) -> ReconfigCase:
    """Kill and reload at the new GPU% (Sec III-1, V-C): downtime = load time, requests = rate x downtime."""
    rate_rps = non_negative("rate_rps", rate_rps)
    load_s = positive("load_s", load_s)
    n = rate_rps * load_s
    return ReconfigCase(mode="restart", downtime_s=load_s, requests_in_downtime=n, backlog_during_load=0.0,
                        requests_affected=n)


def standby_case(rate_rps: float, load_s: float, switch_s: float,
                 old_capacity_rps: Optional[float] = None) -> ReconfigCase:
    """Overlapped-Execution (Sec V-C): only the switch-over is downtime, rate x switch_s requests.

    While the shadow loads (load_s), the active instance serves at its old capacity (req/s); arrivals
    above it, (rate - capacity) x load_s, queue up (delayed, not lost). Unknown capacity: no backlog.
    """
    rate_rps = non_negative("rate_rps", rate_rps)
    load_s = positive("load_s", load_s)
    switch_s = non_negative("switch_s", switch_s)
    backlog = 0.0
    if old_capacity_rps is not None:
        backlog = max(0.0, rate_rps - non_negative("old_capacity_rps", old_capacity_rps)) * load_s
    n = rate_rps * switch_s
    return ReconfigCase(mode="standby", downtime_s=switch_s, requests_in_downtime=n, backlog_during_load=backlog,
                        requests_affected=n + backlog)


def reconfiguration(rate_rps: float, load_s: float = RESTART_LOAD_S, switch_s: float = STANDBY_SWITCH_S,
                    old_capacity_rps: Optional[float] = None) -> Reconfiguration:
    """A GPU% change at `rate_rps` by restart and by standby instance, side by side."""
    return Reconfiguration(rate_rps=non_negative("rate_rps", rate_rps), load_s=positive("load_s", load_s),
                           switch_s=non_negative("switch_s", switch_s), old_capacity_rps=old_capacity_rps,
                           restart=restart_case(rate_rps, load_s),
                           standby=standby_case(rate_rps, load_s, switch_s, old_capacity_rps))
