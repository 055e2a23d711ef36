"""engine.policy_rules: one rule per batching policy and scheduler, found by name, and the facts both engines read."""

import pytest

from engine.policy_rules import (BATCHING_RULES, SCHEDULER_RULES, BatchMaxRule, WaitModel, rule_for,
                                 scheduler_rule_for)
from engine.vocab import BatchingPolicy, SchedulerPolicy


def test_every_policy_and_scheduler_has_exactly_one_rule():
    assert set(BATCHING_RULES) == set(BatchingPolicy)
    assert set(SCHEDULER_RULES) == set(SchedulerPolicy)
    assert all(rule_for(policy.value) is BATCHING_RULES[policy] for policy in BatchingPolicy)
    assert all(scheduler_rule_for(policy.value) is SCHEDULER_RULES[policy] for policy in SchedulerPolicy)


def test_an_unknown_name_lists_the_valid_ones():
    with pytest.raises(ValueError, match="none, fixed, preba, work-conserving"):
        rule_for("greedy")
    with pytest.raises(ValueError, match="fifs, elsa, round-robin, jsq"):
        scheduler_rule_for("lottery")


def test_batch_max_follows_each_policys_rule():
    # top 32 items profiled, knee at 12, the scenario asks for 20, the largest query is 4 items
    caps = {policy: rule_for(policy).batch_max(32, 12, 20, 4) for policy in BatchingPolicy}
    assert caps == {BatchingPolicy.NONE: 4, BatchingPolicy.PREBA: 12, BatchingPolicy.FIXED: 20,
                    BatchingPolicy.WORK_CONSERVING: 20}
    assert rule_for("fixed").batch_max(32, 12, None, 4) == 12  # the knee by default
    assert rule_for("fixed").batch_max(8, 12, 20, 4) == 8  # never beyond the profile and memory


def test_time_queue_follows_each_policys_rule():
    knee_times = [0.004, 0.006]
    assert rule_for("none").time_queue_s(3.0, knee_times) == 0.0
    assert rule_for("work-conserving").time_queue_s(3.0, knee_times) == 0.0
    assert rule_for("fixed").time_queue_s(3.0, knee_times) == 0.003
    assert rule_for("fixed").time_queue_s(None, knee_times) == 0.002  # PREBA 4.3: Time_knee / partitions
    assert rule_for("preba").time_queue_s(3.0, knee_times) == 0.002  # PREBA ignores a requested delay


def test_rules_name_their_models():
    assert rule_for("none").wait_model == WaitModel.UNBATCHED and not rule_for("none").batches
    assert rule_for("work-conserving").wait_model == WaitModel.BULK_SERVICE
    assert rule_for("fixed").wait_model == WaitModel.TIMER_CHAIN
    assert rule_for("preba").batch_max_rule == BatchMaxRule.KNEE and rule_for("preba").length_buckets
    assert not scheduler_rule_for("round-robin").pooled and scheduler_rule_for("jsq").pooled
