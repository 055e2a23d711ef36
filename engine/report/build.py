"""build_report(scenarios, ctx) -> Report: each design evaluated, its load curve and the profiles it used.

The Report is plain, frozen data; engine.report.html renders it, engine.report.tables flattens it into
the CSV/Parquet tables, and engine.report.readback recovers its scenarios from the HTML or JSON.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.analytic import Context, Evaluation, build_design, evaluate_design
from engine.analytic import load_curve as analytic_load_curve
from engine.errors import KneepointError
from engine.report.provenance import ProfileUse, profiles_used
from engine.reproduce.runner import ReproductionRow, run as run_reproductions
from engine.scenario import Scenario, ScenarioError, load_scenario

ENGINE_VERSION = "0.8"  # bump when results for the same scenario and data change
REPORT_SCHEMA = "kneepoint.report/1"
CURVE_POINTS = 40  # the Design page's latency-vs-load curve: 40 rates up to capacity
_ROOT = Path(__file__).resolve().parents[2]


class LoadCurve(BaseModel):
    """Analytic mean and tail latency (ms) at rates up to capacity (the Design page's curve)."""

    model_config = ConfigDict(frozen=True)

    rates_rps: tuple[float, ...]
    mean_ms: tuple[float, ...]
    tail_ms: tuple[float, ...]
    percentile: float


class DesignResult(BaseModel):
    """One design of a report: its scenario, evaluation, load curve and the latency profiles it used."""

    model_config = ConfigDict(frozen=True)

    scenario: Scenario
    evaluation: Evaluation
    curve: LoadCurve
    profiles: tuple[ProfileUse, ...]


class PapersSection(BaseModel):
    """The seed papers' reproduction table as the engine computes it now (engine.reproduce.runner's rows); the slow
    and the simulator's entries are run only when asked (their rows say 'slow, not run' / 'needs --simulate')."""

    model_config = ConfigDict(frozen=True)

    rows: tuple[ReproductionRow, ...]
    include_slow: bool
    simulate: bool


def papers_section(ctx: Context, include_slow: bool = False, simulate: bool = False) -> PapersSection:
    """Every paper's reproduction rows, run against `ctx`."""
    return PapersSection(rows=tuple(run_reproductions(ctx, include_slow=include_slow, simulate=simulate)),
                         include_slow=include_slow, simulate=simulate)


class Report(BaseModel):
    """A report over one or more designs, with what is needed to reproduce it."""

    model_config = ConfigDict(frozen=True)

    title: str
    created: str  # ISO 8601, UTC
    engine_version: str
    seed_hash: str  # engine.store.seed_hash of the seed tables the store was built from
    user_rows: dict[str, int]  # the user's own rows per table (imports, profiler output) beside the seed
    designs: tuple[DesignResult, ...]
    papers: Optional[PapersSection] = None  # the "Seed papers" section, when asked for

    @property
    def scenarios(self) -> list[Scenario]:
        return [d.scenario for d in self.designs]


def engine_version(root: Path = _ROOT) -> str:
    """ENGINE_VERSION, with the checkout's git commit when there is one (read from .git, no subprocess)."""
    head = root / ".git" / "HEAD"
    try:
        ref = head.read_text().strip()
        if ref.startswith("ref: "):
            name = ref[5:]
            loose = root / ".git" / name
            if loose.exists():
                ref = loose.read_text().strip()
            else:
                packed = (root / ".git" / "packed-refs").read_text().splitlines()
                ref = next(line.split()[0] for line in packed if line.endswith(" " + name))
        return f"{ENGINE_VERSION} (git {ref[:10]})"
    except (OSError, StopIteration, IndexError):
        return ENGINE_VERSION


def unique_names(scenarios: list[Scenario]) -> list[Scenario]:
    """The scenarios, a repeated name numbered ('x (2)'), so every table row names one design."""
    seen: set[str] = set()
    out = []
    for sc in scenarios:
        name, k = sc.name, 2
        while name in seen:
            name, k = f"{sc.name} ({k})", k + 1
        seen.add(name)
        out.append(sc if name == sc.name else sc.model_copy(update={"name": name}))
    return out


def _labelled(e: ValueError, index: int, name: Optional[str]) -> ValueError:
    """The same error, its message prefixed with which scenario of the report it is about."""
    msg = f"scenario {index}" + (f" ({name!r})" if name else "") + f": {e}"
    try:
        return type(e)(msg)
    except TypeError:  # an error class with its own constructor
        return ValueError(msg)


def load_curve(design, percentile: float, points: int = CURVE_POINTS) -> LoadCurve:
    """Mean and SLA-percentile latency at `points` rates from capacity/points to just below capacity."""
    points_on_curve = analytic_load_curve(design, points)
    return LoadCurve(rates_rps=tuple(rate for rate, _, _ in points_on_curve),
                     mean_ms=tuple(mean * 1e3 for _, mean, _ in points_on_curve),
                     tail_ms=tuple(tail * 1e3 for _, _, tail in points_on_curve), percentile=percentile)


def build_report(scenarios: list[Scenario | dict | str], ctx: Context, *, seed_hash: str,
                 title: str = "Kneepoint design report", user_rows: Optional[dict[str, int]] = None,
                 created: Optional[datetime] = None, papers: bool = False, papers_slow: bool = False,
                 papers_simulate: bool = False) -> Report:
    """Evaluate every scenario (validated against ctx's book) and collect what the report shows; with `papers`,
    also the seed papers' reproduction table (papers_section: the slow and simulator entries only when asked).

    Raises engine.scenario.ScenarioError for an invalid scenario, naming it and the field."""
    if not scenarios:
        raise ScenarioError("a report needs at least one scenario")
    valid = []
    for i, sc in enumerate(scenarios, start=1):
        try:
            valid.append(load_scenario(sc, ctx.book))
        except KneepointError as e:
            label = getattr(sc, "name", None) or (sc.get("name") if isinstance(sc, dict) else None)
            raise _labelled(e, i, label) from None
    designs = []
    for i, sc in enumerate(unique_names(valid), start=1):
        try:
            design = build_design(sc, ctx)
            ev = evaluate_design(design, ctx)
            designs.append(DesignResult(scenario=sc, evaluation=ev, curve=load_curve(design, ev.sla.percentile),
                                        profiles=profiles_used(sc, design, ctx.book)))
        except KneepointError as e:  # ProfileError and kin: a question the profiles cannot answer
            raise _labelled(e, i, sc.name) from None
    when = (created or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(microsecond=0)
    return Report(title=title.strip() or "Kneepoint design report", created=when.isoformat(),
                  engine_version=engine_version(), seed_hash=seed_hash, user_rows=dict(user_rows or {}),
                  designs=tuple(designs),
                  papers=papers_section(ctx, papers_slow, papers_simulate) if papers else None)
