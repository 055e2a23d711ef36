"""Helpers the paper modules share: evaluate a scenario dict, remember what several entries read."""

from __future__ import annotations

from engine.analytic import build_design, evaluate_design
from engine.scenario import load_scenario


def remembered(ctx, key: str, make):
    """`make()` once per context (several entries read the same comparison)."""
    return ctx.memo(("reproduce", key), make)


def evaluate(ctx, data: dict, rate: float | None = None, cost_basis: str = "sla-bounded"):
    """The analytic evaluation of scenario `data` (validated first), at `rate` (default: its own load)."""
    key = repr((sorted(data.items(), key=str), rate, cost_basis))

    def make():
        design = build_design(load_scenario(data, ctx.book), ctx)
        return evaluate_design(design, ctx, rate=rate, cost_basis=cost_basis)
    return remembered(ctx, key, make)


def ratio(a: float, b: float) -> float:
    return a / b


def saving_pct(new: float, old: float) -> float:
    """How much lower `new` is than `old`, in percent of `old`."""
    return 100.0 * (1.0 - new / old)
