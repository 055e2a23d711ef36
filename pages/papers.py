"""Papers: each seed paper's headline results beside what the engine computes for them (engine.reproduce)."""

import pandas as pd
import streamlit as st

from engine.charts.papers import reproduction_chart
from engine.errors import KneepointError
from engine.io.urlstate import encode, encode_many
from engine.seed.papers import PAPERS
from engine.reproduce.registry import entries, presets_of
from engine.reproduce.runner import WITHIN, ReproductionRow, run, summarise
from engine.scenario import load_scenario
from ui.compare_state import preset_designs
from ui.compute import engine_call
from ui.design_state import context
from ui.tables import show
from ui.text import md
from ui.gate import guard_page
from ui.figures import cached_figure

guard_page()  # before anything else: the page may run without app.py (ui/gate.py)

st.title("Papers")
st.caption("Every headline number of the five seed papers beside the engine's own answer, computed by running the "
           "engine (never typed in): the relative error, whether the parameters it uses were fitted on that "
           f"figure (in-sample) or not (out-of-sample), and why where there is no answer. Within {WITHIN:.0%} of "
           "the paper counts as reproduced. `python -m engine reproduce --simulate` also runs the simulator's "
           "entries.")


@engine_call(entries=16, spinner="Running the engine for this paper's results...")
def rows_for(paper: str, include_slow: bool) -> list[dict]:
    """Dicts (what the cache keeps) of one paper's rows; with the slow entries, which take up to a minute."""
    return [r.model_dump() for r in run(context(), paper=paper, include_slow=include_slow)]


@engine_call(entries=4, spinner="Running the engine for the papers' results...")
def quick_rows() -> dict[str, list[dict]]:
    """Every paper's rows without the slow entries, computed together the first time any paper is shown (at server
    start ui/serve.py opens this page, so a visitor never waits for it): choosing another paper is then a lookup."""
    return {key: [r.model_dump() for r in run(context(), paper=key, include_slow=False)] for key in PAPERS}


paper = st.selectbox("Paper", list(PAPERS), key="pap_paper", format_func=lambda k: f"{k} ({PAPERS[k]})")
include_slow = st.toggle("Include the slow entries (up to a minute)", key="pap_slow", value=False)
rows = rows_for(paper, True) if include_slow else quick_rows()[paper]
models = [ReproductionRow(**r) for r in rows]
summary = summarise(models)
c1, c2, c3, c4 = st.columns(4)
c1.metric("results", summary.entries)
c2.metric(f"within {WITHIN:.0%}", summary.within)
c3.metric("out of sample (computed)", summary.out_of_sample)
c4.metric("not modelled", summary.not_modelled)
table = pd.DataFrame([{"result": r["quantity"], "where": r["where"], "paper": r["paper_value"],
                       "Kneepoint": r["kneepoint"], "unit": r["unit"],
                       "error (%)": None if r["rel_error"] is None else r["rel_error"] * 100,
                       "within": r["within"], "sample": r["sample"], "status": r["status"],
                       "mechanism / reason": r["mechanism"], "id": r["id"]} for r in rows])
show(table, key="pap_table")
st.caption(summary.line())
st.plotly_chart(cached_figure(reproduction_chart, models), key="pap_chart")
st.caption(f"Each computed result as Kneepoint's value over the paper's (1 = the paper's number; the shaded band is "
           f"within {WITHIN:.0%}). Results without a value (not modelled, or not run here) keep their line with the "
           "reason instead of a point. Hover a point for both values, the unit and where in the paper it is.")
designs = [e for e in entries(paper) if e.design is not None]
if designs:
    st.subheader("Open on Design")
    st.caption("Results whose value comes from one design: open that very scenario on the Design page.")
    book = context().book
    for e in designs:
        scenario = load_scenario(e.design, book)  # validated once: its name labels the link, its encoding is the link
        st.page_link("pages/design.py", label=f"{e.id}: {scenario.name}", icon=":material/tune:",
                     query_params={"s": encode(scenario)})
st.subheader("Open on Compare")
st.caption("This paper's Compare presets, built from the same scenarios its results are computed from: open them "
           "side by side on the Compare page.")
for key, preset in presets_of(paper).items():
    try:
        token = encode_many([load_scenario(d, context().book) for d in preset_designs(key)])
    except KneepointError as e:  # a preset whose engine part cannot answer (PresetError, ScenarioError)
        st.warning(f"{md(preset.name)}: cannot be built ({md(e)})")
        continue
    st.page_link("pages/compare.py", label=preset.name, icon=":material/compare_arrows:", query_params={"c": token})
