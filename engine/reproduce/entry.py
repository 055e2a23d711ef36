"""One reproduction: how Kneepoint computes a published headline number, and on what its parameters were fitted.

An entry either computes its value by running the engine (`compute(ctx)`, ctx an engine.analytic.Context) or
says why it cannot (`not_modelled`): a value typed in from the paper is not a reproduction. `fitted_on`
names the paper_results ids whose figures the parameters it uses were tuned to; `sample` follows from it:
in-sample when one of them is the entry's own result or lies in the same figure/table, else out-of-sample.
`design` is the one scenario (a dict) whose evaluation is the whole result, where there is one: the very dict the
compute function evaluates (shared, not copied), so the Papers page can open it on the Design page.
`explain`, where given, computes the part of the reason that rests on numbers (what a miss implies).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from engine.seed.papers import paper_results

IN_SAMPLE, OUT_OF_SAMPLE, NOT_MODELLED = "in-sample", "out-of-sample", "not modelled"


@dataclass(frozen=True)
class Entry:
    id: str  # a paper_results.csv id
    scenario: str  # what the engine runs, in words
    mechanism: str  # why the engine's number follows (or, when not modelled, why it cannot)
    compute: Optional[Callable[[object], float]] = None  # ctx -> the value, in the paper's unit
    fitted_on: tuple[str, ...] = ()
    not_modelled: str = ""  # the reason, when there is no compute
    simulator: bool = False  # runs the discrete-event simulator: only with --simulate
    slow: bool = False  # more than a few seconds: its test is marked slow
    #: the scenario dict compute evaluates, when one scenario is the whole story (never mutated; not hashed)
    design: Optional[dict] = field(default=None, hash=False)
    #: ctx -> words appended to the mechanism when the entry runs: numbers the engine computes to say why a
    #: result misses (engine.reproduce.implied), so the reason quotes no number typed in by hand
    explain: Optional[Callable[[object], str]] = field(default=None, hash=False, compare=False)

    def __post_init__(self):
        if (self.compute is None) == (not self.not_modelled):
            raise ValueError(f"{self.id}: an entry has either a compute function or a not-modelled reason")

    @property
    def result(self):
        return paper_results()[self.id]

    @property
    def sample(self) -> str:
        if self.not_modelled:
            return NOT_MODELLED
        return IN_SAMPLE if self.fitted_to_own_figure else OUT_OF_SAMPLE

    @property
    def fitted_to_own_figure(self) -> bool:
        """Some fitted-on result is this one, or shares a figure/table with it."""
        results = paper_results()
        own = self.result
        return any(f == self.id or (results[f].paper == own.paper and results[f].figures & own.figures)
                   for f in self.fitted_on)
