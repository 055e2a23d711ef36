"""Per-request cost models of the pipeline stages (DESIGN.md section 5).

Each stage model is a pure function returning a StageCost: the time a request
spends in service there (on the critical path), how many servers work in
parallel, the stage's capacity, and the host CPU it consumes. The analytic
engine queues requests in front of each stage; the simulator samples the same
numbers.
"""

from engine.stages.base import StageCost

__all__ = ["StageCost"]
