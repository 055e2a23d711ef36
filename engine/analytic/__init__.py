"""Analytic engine: capacity, bottleneck, queueing approximations, SLA-bounded throughput (DESIGN.md section 5)."""

from engine.analytic.operating_point import (RatePoint, at_rate, capacity, load_curve, mean_and_sla, sla_bounded_rate,
                                             sweep)
from engine.analytic.pipeline import Context, build_design
from engine.analytic.evaluate import Evaluation, evaluate, evaluate_design

__all__ = ["Context", "Evaluation", "RatePoint", "at_rate", "build_design", "capacity", "evaluate",
           "evaluate_design", "load_curve", "mean_and_sla", "sla_bounded_rate", "sweep"]
