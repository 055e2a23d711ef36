"""A host-side stage (RPC, preprocessing, a DPU...) at one arrival rate.

Each stage is a G/G/c queue with Poisson arrivals (c_a^2 = 1) and its StageCost's service time and SCV: the
mean wait by Allen-Cunneen and the wait's tail exponential (engine.analytic.queueing.gg_c_wait), the service's
p-quantile log-normal with that SCV. Times in s, rates in requests/s.
"""

import math

from pydantic import BaseModel, ConfigDict

from engine.analytic.queueing import gg_c_wait
from engine.analytic.made import made
from engine.profiles.tails import lognormal_quantile
from engine.stages import StageCost


class StagePoint(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    servers: float
    service_s: float
    fixed_s: float
    capacity_rps: float
    utilization: float
    wait_mean_s: float
    wait_q_s: float
    service_q_s: float



def host_stage_point(stage: StageCost, lam: float, p: float) -> StagePoint:
    """A host-side stage at `lam` requests/s (G/G/c, Poisson arrivals)."""
    util = lam / stage.capacity_rps
    if stage.service_s <= 0:
        return made(StagePoint, name=stage.name, servers=stage.servers, service_s=0.0, fixed_s=stage.fixed_s,
                          capacity_rps=stage.capacity_rps, utilization=util, wait_mean_s=0.0 if util < 1 else math.inf,
                          wait_q_s=0.0 if util < 1 else math.inf, service_q_s=0.0)
    servers = max(stage.capacity_rps * stage.service_s, 1e-9)  # effective servers (a cap may bind first)
    wq, wqq, _ = gg_c_wait(lam, stage.service_s, servers, 1.0, stage.scv, p)
    return made(StagePoint, name=stage.name, servers=servers, service_s=stage.service_s, fixed_s=stage.fixed_s,
                      capacity_rps=stage.capacity_rps, utilization=util, wait_mean_s=wq, wait_q_s=wqq,
                      service_q_s=lognormal_quantile(stage.service_s, stage.scv, p))
