"""Run the registry: one row per entry, paper value beside Kneepoint's, relative error, sample."""

from __future__ import annotations

import math
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.reproduce.entry import NOT_MODELLED, Entry
from engine.reproduce.registry import entries

#: the issue's bar: a result is reproduced when Kneepoint is within this fraction of the paper
WITHIN = 0.25
NEEDS_SIMULATE = "needs --simulate"
SLOW_NOT_RUN = "slow, not run"


class ReproductionRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    paper: str
    where: str
    quantity: str
    unit: str
    paper_value: float
    kneepoint: Optional[float]  # None when not modelled or not run
    rel_error: Optional[float]  # (kneepoint - paper) / |paper|
    within: bool  # |rel_error| <= WITHIN
    sample: str  # in-sample | out-of-sample | not modelled
    status: str  # "ok", "not modelled", NEEDS_SIMULATE, SLOW_NOT_RUN
    mechanism: str  # how the value follows, or why there is none
    scenario: str
    fitted_on: tuple[str, ...]


class Summary(BaseModel):
    model_config = ConfigDict(frozen=True)

    entries: int
    computed: int
    within: int
    out_of_sample: int
    out_of_sample_within: int
    in_sample: int
    not_modelled: int
    not_run: int

    def line(self) -> str:
        return (f"{self.entries} entries: {self.within} within {WITHIN:.0%} of the paper "
                f"({self.out_of_sample_within} of them out of sample); {self.out_of_sample} out of sample, "
                f"{self.in_sample} in sample, {self.not_modelled} not modelled"
                + (f", {self.not_run} not run (slow or {NEEDS_SIMULATE})" if self.not_run else ""))


def run_entry(e: Entry, ctx, simulate: bool = False, include_slow: bool = True) -> ReproductionRow:
    r = e.result
    common = dict(id=e.id, paper=r.paper, where=r.where, quantity=r.quantity, unit=r.unit, paper_value=r.value,
                  sample=e.sample, scenario=e.scenario, fitted_on=e.fitted_on)
    if e.not_modelled:
        return ReproductionRow(**common, kneepoint=None, rel_error=None, within=False, status=NOT_MODELLED,
                               mechanism=e.not_modelled)
    if (e.simulator and not simulate) or (e.slow and not include_slow):
        return ReproductionRow(**common, kneepoint=None, rel_error=None, within=False, mechanism=e.mechanism,
                               status=NEEDS_SIMULATE if e.simulator and not simulate else SLOW_NOT_RUN)
    value = float(e.compute(ctx))
    if not math.isfinite(value):
        raise ValueError(f"{e.id}: the engine returned {value!r}")
    err = (value - r.value) / abs(r.value) if r.value else None
    mechanism = f"{e.mechanism} {e.explain(ctx)}" if e.explain is not None else e.mechanism
    return ReproductionRow(**common, kneepoint=value, rel_error=err, within=err is not None and abs(err) <= WITHIN,
                           status="ok", mechanism=mechanism)


def run(ctx, paper: Optional[str] = None, simulate: bool = False, include_slow: bool = True) -> list[ReproductionRow]:
    """Every entry of `paper` (or all papers) run against the engine context `ctx`; `include_slow=False` leaves
    the slow ones out (a page answers in seconds), `simulate=False` the simulator's."""
    return [run_entry(e, ctx, simulate, include_slow) for e in entries(paper)]


def summarise(rows: list[ReproductionRow]) -> Summary:
    done = [r for r in rows if r.status == "ok"]
    oos = [r for r in done if r.sample == "out-of-sample"]
    return Summary(entries=len(rows), computed=len(done), within=sum(r.within for r in done),
                   out_of_sample=len(oos), out_of_sample_within=sum(r.within for r in oos),
                   in_sample=sum(r.sample == "in-sample" for r in done),
                   not_modelled=sum(r.status == NOT_MODELLED for r in rows),
                   not_run=sum(r.status in (NEEDS_SIMULATE, SLOW_NOT_RUN) for r in rows))
