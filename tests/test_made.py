"""engine.analytic.made: the hot path's result models built without validation equal model_construct's."""

import math

import pytest

from engine.analytic.host_point import StagePoint
from engine.analytic.made import made
from engine.analytic.rates import GpuPoint

GPU = dict(capacity_rps=900.0, utilization=0.5, batch=(3.5, 2.0), partition_utilization=(0.4, 0.6),
           batching_wait_mean_s=1e-3, batching_wait_q_s=2e-3, queue_wait_mean_s=0.0, queue_wait_q_s=math.inf,
           service_mean_s=4e-3, service_q_s=6e-3, saturated=False)
STAGE = dict(name="rpc", servers=30.0, service_s=1e-4, fixed_s=2e-5, capacity_rps=3e5, utilization=0.1,
             wait_mean_s=0.0, wait_q_s=0.0, service_q_s=2e-4)


@pytest.mark.parametrize("cls, fields", [(GpuPoint, GPU), (StagePoint, STAGE)])
def test_made_is_model_construct(cls, fields):
    a, b = made(cls, **fields), cls.model_construct(**fields)
    assert type(a) is cls and a == b and hash(a) == hash(b) and a.model_dump() == b.model_dump()
    assert a.model_fields_set == b.model_fields_set and a.model_dump_json() == b.model_dump_json()
    with pytest.raises(Exception):
        a.utilization = 1.0  # still frozen


def test_made_wants_every_field_by_name():
    with pytest.raises(TypeError, match="takes the fields"):
        made(StagePoint, **{k: v for k, v in STAGE.items() if k != "fixed_s"})
    with pytest.raises(TypeError, match="takes the fields"):
        made(StagePoint, **STAGE, extra=1.0)
