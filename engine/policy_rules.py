"""One rule object per batching policy and per scheduler: the facts both engines read instead of `if` chains.

A batching policy decides four things (PREBA section 4.3 for its own; DESIGN.md for the others):
- Batch_max, in items: the largest query (no batching), the utilisation knee (PREBA), or the scenario's
  max_batch with the knee as default (fixed, work-conserving);
- Time_queue, in s: none (no batching, work-conserving: a batch leaves when an instance frees), the
  scenario's max_queue_delay_ms (fixed only), else Time_knee of one partition / number of partitions (PREBA 4.3);
- how many requests a batch holds: one without batching, else as many as fit in Batch_max items;
- which analytic wait model prices one instance (engine.analytic.rates names a step per WaitModel), and
  whether the simulator splits batches into length buckets (PREBA 4.3, variable-length models).

A scheduler's one fact the analytic engine needs is whether it pools the partitions (first-idle, ELSA,
join-shortest-queue: one shared queue) or deals arrivals evenly (round-robin: each partition its share). The
simulator's scheduler classes are looked up by the same enum in engine.sim.schedulers.

Imports only engine.vocab, so both engines may use it without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Optional, Sequence

from engine.vocab import BatchingPolicy, SchedulerPolicy


class BatchMaxRule(StrEnum):
    """Where a policy's Batch_max (items) comes from, always within the profiled batches and memory (`top`)."""

    LARGEST_QUERY = "largest-query"  # no batching: a batch is one query, up to the largest query size
    KNEE = "knee"  # PREBA 4.3: Batch_max = Batch_knee
    REQUESTED_OR_KNEE = "requested-or-knee"  # the scenario's max_batch, else the knee


class WaitModel(StrEnum):
    """The analytic wait model of a policy (engine.analytic.rates has one step per model).

    BULK_SERVICE and TIMER_CHAIN are exact chains for one instance; with more instances, and for PREBA
    (whose timer chain is too slow for sweeps, issue 19), the gathering time plus a queue of batches applies.
    """

    UNBATCHED = "unbatched"  # each query alone: M/G/1 on one instance, G/G/c or per-partition G/G/1 otherwise
    BULK_SERVICE = "bulk-service"  # one instance takes whatever waits when it frees (bulk_service_queue)
    TIMER_CHAIN = "timer-chain"  # one instance under a timer (timer_batch_queue), when Time_queue > 0
    GATHER_AND_QUEUE = "gather-and-queue"  # a batch gathers for up to Time_queue, then queues for an instance


@dataclass(frozen=True)
class BatchingRule:
    """What a batching policy means to both engines."""

    policy: BatchingPolicy
    batches: bool  # requests share a batch (False: one request per batch)
    batch_max_rule: BatchMaxRule
    uses_time_queue: bool  # a timer releases a batch after Time_queue (False: Time_queue is 0)
    honours_requested_delay: bool  # the scenario's max_queue_delay_ms sets Time_queue
    wait_model: WaitModel  # the analytic model of one instance's waits
    length_buckets: bool  # the simulator batches variable-length inputs by length bucket, with merging

    def batch_max(self, top: int, knee: int, requested: Optional[int], largest_query: int) -> int:
        """Batch_max (items) of a partition whose profile and memory allow `top` and whose knee is `knee`."""
        if self.batch_max_rule == BatchMaxRule.LARGEST_QUERY:
            return min(top, largest_query)
        if self.batch_max_rule == BatchMaxRule.KNEE:
            return min(top, knee)
        want = requested if requested is not None else knee
        return max(1, min(top, want))

    def time_queue_s(self, requested_delay_ms: Optional[float], knee_times_s: Sequence[float]) -> float:
        """Time_queue (s): 0 without a timer, the requested delay where the policy honours one, else
        PREBA 4.3's Time_knee of one partition / number of partitions (the fastest partition's knee time)."""
        if not self.uses_time_queue:
            return 0.0
        if self.honours_requested_delay and requested_delay_ms is not None:
            return requested_delay_ms / 1e3
        return min(knee_times_s) / len(knee_times_s)


BATCHING_RULES: dict[BatchingPolicy, BatchingRule] = {rule.policy: rule for rule in (
    BatchingRule(policy=BatchingPolicy.NONE, batches=False, batch_max_rule=BatchMaxRule.LARGEST_QUERY,
                 uses_time_queue=False, honours_requested_delay=False, wait_model=WaitModel.UNBATCHED,
                 length_buckets=False),
    BatchingRule(policy=BatchingPolicy.FIXED, batches=True, batch_max_rule=BatchMaxRule.REQUESTED_OR_KNEE,
                 uses_time_queue=True, honours_requested_delay=True, wait_model=WaitModel.TIMER_CHAIN,
                 length_buckets=False),
    BatchingRule(policy=BatchingPolicy.PREBA, batches=True, batch_max_rule=BatchMaxRule.KNEE,
                 uses_time_queue=True, honours_requested_delay=False, wait_model=WaitModel.GATHER_AND_QUEUE,
                 length_buckets=True),
    BatchingRule(policy=BatchingPolicy.WORK_CONSERVING, batches=True, batch_max_rule=BatchMaxRule.REQUESTED_OR_KNEE,
                 uses_time_queue=False, honours_requested_delay=False, wait_model=WaitModel.BULK_SERVICE,
                 length_buckets=False),
)}


@dataclass(frozen=True)
class SchedulerRule:
    """What a scheduler means to the analytic engine."""

    policy: SchedulerPolicy
    pooled: bool  # one shared queue feeds every partition (False: arrivals dealt evenly, one queue each)
    sized_by_alpha_beta: bool = False  # routes by a query-size estimate scaled by the scenario's alpha and beta


SCHEDULER_RULES: dict[SchedulerPolicy, SchedulerRule] = {rule.policy: rule for rule in (
    SchedulerRule(policy=SchedulerPolicy.FIFS, pooled=True),
    SchedulerRule(policy=SchedulerPolicy.ELSA, pooled=True, sized_by_alpha_beta=True),
    SchedulerRule(policy=SchedulerPolicy.ROUND_ROBIN, pooled=False),
    SchedulerRule(policy=SchedulerPolicy.JSQ, pooled=True),
)}


def rule_for(policy: BatchingPolicy | str) -> BatchingRule:
    """The rule of a batching policy (an enum member or its name); an unknown name lists the valid ones."""
    return _lookup(BATCHING_RULES, BatchingPolicy, policy, "batching policy")


def scheduler_rule_for(policy: SchedulerPolicy | str) -> SchedulerRule:
    """The rule of a scheduler (an enum member or its name); an unknown name lists the valid ones."""
    return _lookup(SCHEDULER_RULES, SchedulerPolicy, policy, "scheduler")


def _lookup(rules: dict, vocabulary: type[StrEnum], policy, what: str):
    try:
        return rules[vocabulary(policy)]
    except ValueError:
        valid = ", ".join(member.value for member in vocabulary)
        raise ValueError(f"unknown {what} {policy!r}; valid: {valid}") from None
