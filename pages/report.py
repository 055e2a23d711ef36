"""Report: export designs (current, pinned, saved) as HTML, CSV, Parquet, JSON, PNG and PDF; keep named
scenarios in the store; import a report to restore its scenarios."""

import hashlib
import json
import secrets
from typing import Optional

import pandas as pd
import streamlit as st

from engine.errors import KneepointError
from engine.report import (ReportError, StaticUnavailable, build_report, find_chromium, html_to_pdf, png_files,
                           read_scenarios, render_html, report_tables, scenarios_json, table_files, zip_bytes)
from engine.report.figures import FIGURE_TITLES, PAPERS_FIGURE_TITLE, design_figure, papers_figure
from engine.report.readback import REPORT_MAX_BYTES, check_report_size
from engine.report.tables import hardware, papers_frame
from engine.scenario import ScenarioError, load_scenario
from engine.store import StoreError, seed_hash
from engine.store.overlay import SessionOverlay
from engine.store.scenarios import AUTHOR_MAX, NOTE_MAX
from engine.io.urlstate import encode
from ui.compute import engine_call
from ui.deploy_state import deployment_download
from ui.design_state import context
from ui.scenarios import current_scenario, pin, pins
from ui.session import get_store
from ui.text import md
from ui.tables import show as show_table
from ui.gate import guard_page
from ui.figures import cached_figure

guard_page()  # before anything else: the page may run without app.py (ui/gate.py)

store = get_store()
book = context().book
st.title("Report")
st.caption("A report of one or more designs for a design review: one self-contained HTML file (opens offline, "
           "scenarios embedded), the result tables as CSV and Parquet, the scenarios as JSON, and PNG/PDF where "
           "a Chromium is installed.")


@engine_call(entries=16, spinner="Evaluating the designs...")
def _bundle(texts: tuple[str, ...], title: str, papers: bool = False, papers_slow: bool = False) -> dict:
    """The report and its small files, once per choice of designs, title, seed-papers section and data version."""
    store = get_store()
    report = build_report(list(texts), context(), seed_hash=seed_hash(store.seed_dir), title=title,
                          user_rows=store.user_counts(), papers=papers, papers_slow=papers and papers_slow)
    return {"report": report, "csv": zip_bytes(table_files(report, "csv")),
            "parquet": zip_bytes(table_files(report, "parquet")), "json": scenarios_json(report)}


def _choices() -> dict[str, str]:
    """Scenario JSON by choice id: the current design, each pin, each saved scenario."""
    out = {"current": current_scenario(book).to_json()}
    for text in pins():
        out[f"pin:{load_scenario(text).name}"] = text
    for row in store.saved_scenarios.list():
        out[f"saved:{row.name}"] = row.scenario
    return out


def _label(cid: str, choices: dict[str, str]) -> str:
    kind = {"current": "Current design", "pin": "Pinned", "saved": "Saved"}[cid.split(":")[0]]
    return f"{kind}: {load_scenario(choices[cid]).name}"


def report_tab() -> None:
    try:
        choices = _choices()
    except StoreError as e:
        st.error(f"The saved scenarios cannot be read: {md(e)}")
        choices = {"current": current_scenario(book).to_json()}
    # drop choices that went away (a deleted save, a cleared pin) before the widget is drawn
    st.session_state["rep_pick"] = [c for c in st.session_state.get("rep_pick", ["current"]) if c in choices]
    c = st.columns([3, 2])
    c[0].multiselect("Designs in the report", list(choices), format_func=lambda k: _label(k, choices), key="rep_pick")
    c[1].text_input("Title", value="Kneepoint design report", key="rep_title")
    p = st.columns([2, 3])
    p[0].checkbox("Include the seed papers", key="rep_papers", value=False,
                  help="a 'Seed papers' section: each seed paper's headline results beside the engine's, as run now "
                       "(the Papers page's table and chart); the simulator's entries only from the command line "
                       "(python -m engine report --papers-simulate)")
    if st.session_state["rep_papers"]:
        p[1].checkbox("with the slow entries (up to a minute)", key="rep_papers_slow", value=False)
    picked = st.session_state["rep_pick"]
    if not picked:
        st.info("Choose at least one design: the current one, a pinned one (Design page: Pin) or a saved one.")
        return
    texts = tuple(choices[k] for k in picked)
    title = st.session_state["rep_title"]
    papers = st.session_state["rep_papers"]
    papers_slow = papers and st.session_state.get("rep_papers_slow", False)
    try:
        files = _bundle(texts, title, papers, papers_slow)
    except KneepointError as e:
        st.error(f"The report cannot be made: {md(e)}")
        return
    report = files["report"]
    stem = "".join(ch if ch.isalnum() else "-" for ch in title).strip("-").lower() or "report"

    st.subheader("Download")
    d = st.columns(4)
    d[0].download_button("HTML report", data=lambda: render_html(report).encode(), file_name=f"{stem}.html",
                         mime="text/html", key="rep_dl_html", on_click="ignore",
                         help="self-contained: plotly inlined, no external script or font; the scenarios are embedded")
    d[1].download_button("Tables (CSV, zip)", data=files["csv"], file_name=f"{stem}-csv.zip",
                         mime="application/zip", key="rep_dl_csv", on_click="ignore")
    d[2].download_button("Tables (Parquet, zip)", data=files["parquet"], file_name=f"{stem}-parquet.zip",
                         mime="application/zip", key="rep_dl_parquet", on_click="ignore")
    d[3].download_button("Scenarios (JSON)", data=files["json"], file_name=f"{stem}-scenarios.json",
                         mime="application/json", key="rep_dl_json", on_click="ignore")
    for i, text in enumerate(texts):  # one deployment zip per design (MIG, Triton, Kubernetes)
        deployment_download(text, key=f"rep_dl_deploy_{i}", name=json.loads(text).get("name", f"design {i + 1}"))
    try:
        chromium = find_chromium()
    except StaticUnavailable as e:
        st.info(f"PNG figures and the PDF are skipped here: {md(e)}.")
    else:
        # the files belong to these designs, this title and this data; any change hides them
        digest = hashlib.sha256(repr((texts, title, papers, papers_slow, store.version())).encode()).hexdigest()
        if st.button("Make PNG figures and PDF", key="rep_static", help=f"renders with {chromium} (a few seconds)"):
            with st.spinner("Rendering with Chromium..."):
                try:
                    static = {"digest": digest, "png": zip_bytes(png_files(report, chromium)),
                              "pdf": html_to_pdf(render_html(report), chromium)}
                except StaticUnavailable as e:
                    static = None
                    st.warning(f"Static images were not made: {md(e)}")
            st.session_state["rep_static_files"] = static
        static = st.session_state.get("rep_static_files")
        if static and static["digest"] == digest:
            s = st.columns(4)
            s[0].download_button("Figures (PNG, zip)", data=static["png"], file_name=f"{stem}-figures.zip",
                                 mime="application/zip", key="rep_dl_png", on_click="ignore")
            s[1].download_button("Report (PDF)", data=static["pdf"], file_name=f"{stem}.pdf",
                                 mime="application/pdf", key="rep_dl_pdf", on_click="ignore")

    st.subheader("Preview")
    st.caption(f"Created {report.created} · engine {report.engine_version} · seed data hash {report.seed_hash}")
    tables = report_tables(report)
    show_table(tables["designs"], key="rep_designs")
    for i, design in enumerate(report.designs):
        with st.expander(f"{i + 1}. {md(design.scenario.name)}: {md(hardware(design.scenario))}", expanded=i == 0):
            for kind, title in FIGURE_TITLES.items():
                st.caption(title)
                st.plotly_chart(cached_figure(design_figure, design, kind), key=f"rep_fig_{i}_{kind}")
            name = design.scenario.name
            st.caption("Cost")
            show_table(tables["cost"][tables["cost"]["scenario"] == name], key=f"rep_cost_{i}")
    st.caption("Provenance: every stored latency point behind each partition's profile")
    show_table(tables["provenance"], key="rep_provenance")
    if report.papers is not None:
        st.subheader("Seed papers")
        st.caption(PAPERS_FIGURE_TITLE)
        st.plotly_chart(cached_figure(papers_figure, report.papers), key="rep_papers_fig")
        show_table(papers_frame(report.papers.rows), key="rep_papers_table")

def _act(where: str, action) -> None:
    """Run a button's action in its callback (before the page is drawn, so every tab sees the change) and
    keep its outcome for the tab `where` to show."""
    try:
        st.session_state["rep_msg"] = (where, "success", action())
    except KneepointError as e:  # ScenarioError, StoreError (a name, an owner, a limit), ReportError
        st.session_state["rep_msg"] = (where, "error", str(e))


def _show_msg(where: str) -> None:
    msg = st.session_state.get("rep_msg")
    if msg and msg[0] == where:
        (st.success if msg[1] == "success" else st.error)(msg[2])
        del st.session_state["rep_msg"]


_OWNER_TOKEN = "_kneepoint_owner_token"  # session_state key of this session's owner token (hosted)


def _owner() -> Optional[str]:
    """This session's owner token for saved scenarios in a hosted app, made on first use and kept in the session
    (a hash of it is stored with what it saves); None locally, where anyone may change any saved scenario."""
    if not isinstance(store, SessionOverlay):  # hosted mode gives every session an overlay (ui.session)
        return None
    return st.session_state.setdefault(_OWNER_TOKEN, secrets.token_urlsafe(24))


def _save() -> str:
    ss = st.session_state
    row = store.saved_scenarios.save(current_scenario(book), name=ss["rep_save_name"], author=ss["rep_save_author"],
                                     note=ss["rep_save_note"], overwrite=ss["rep_save_overwrite"], owner=_owner())
    return f"Saved {row.name!r}."


def _pin_saved() -> str:
    chosen = st.session_state["rep_saved_pick"]
    n = pin(load_scenario(store.saved_scenarios.get(chosen).scenario, book))
    return f"Pinned {chosen!r} ({n} pinned)."


def _rename() -> str:
    old, new = st.session_state["rep_saved_pick"], st.session_state["rep_rename_to"]
    store.saved_scenarios.rename(old, new, owner=_owner())
    st.session_state["rep_saved_pick"] = new
    return f"Renamed {old!r} to {new!r}."


def _delete() -> str:
    chosen = st.session_state["rep_saved_pick"]
    store.saved_scenarios.delete(chosen, owner=_owner())
    return f"Deleted {chosen!r}."


def _uploaded_scenarios(up) -> list:
    """The uploaded report's scenarios; its size is checked before its bytes are read."""
    check_report_size(up.size, up.name)
    return read_scenarios(up.getvalue(), book, source=up.name)


def _restore() -> str:
    restored = _uploaded_scenarios(st.session_state["rep_import"])
    for s in restored:
        n = pin(s)
    return f"Restored {len(restored)} scenario(s); {n} pinned. They are now choices on the Report tab and on Compare."


def saved_tab() -> None:
    owner = _owner()
    if owner is None:
        st.caption("Named scenarios kept in the profile store's user directory (shared by everyone using this store).")
    else:
        st.caption("Shared with everyone using this app: anyone may list, pin and open a saved scenario; only the "
                   "browser session that saved one may overwrite, rename or delete it.")
    _show_msg("saved")
    c = st.columns([2, 1, 2, 1])
    c[0].text_input("Save the current design as", value=current_scenario(book).name, key="rep_save_name")
    c[1].text_input("Author", key="rep_save_author", max_chars=AUTHOR_MAX)
    c[2].text_input("Note", key="rep_save_note", max_chars=NOTE_MAX)
    c[3].checkbox("Overwrite", key="rep_save_overwrite", help="replace a saved scenario of the same name")
    st.button("Save", key="rep_save", on_click=_act, args=("saved", _save))
    try:
        saved = store.saved_scenarios.list()
    except StoreError as e:
        st.error(str(e))
        return
    if not saved:
        st.info("No saved scenarios yet.")
        return
    listing = pd.DataFrame([{"name": s.name, "author": s.author, "saved (UTC)": s.saved_at, "note": s.note,
                             "design": f"{load_scenario(s.scenario).model} on {hardware(load_scenario(s.scenario))}"}
                            for s in saved])
    if owner is not None:
        listing["yours"] = [s.owned_by(owner) for s in saved]
    show_table(listing, key="rep_saved_table")
    names = [s.name for s in saved]
    if st.session_state.get("rep_saved_pick") not in names:  # before the widget exists, so it may be set
        st.session_state["rep_saved_pick"] = names[0]
    c = st.columns([2, 1, 1, 2, 1, 1])
    chosen = c[0].selectbox("Saved scenario", names, key="rep_saved_pick")
    # hosted: only the session that saved it may change it (the shelf refuses anyway; this says so up front)
    locked = owner is not None and not next(s for s in saved if s.name == chosen).owned_by(owner)
    why = "saved by another session: only its owner may change it" if locked else None
    c[1].button("Pin", key="rep_saved_pin", help="add to the pinned designs (Compare, Report)", on_click=_act,
                args=("saved", _pin_saved))
    if c[2].button("Open in Design", key="rep_saved_open"):
        chosen = st.session_state["rep_saved_pick"]
        try:
            sc = load_scenario(store.saved_scenarios.get(chosen).scenario, book)
        except (ScenarioError, StoreError) as e:
            st.error(f"{md(repr(chosen))} cannot be used: {md(e)}")
        else:
            st.switch_page("pages/design.py", query_params={"s": encode(sc)})
    c[3].text_input("New name", key="rep_rename_to")
    c[4].button("Rename", key="rep_rename", on_click=_act, args=("saved", _rename), disabled=locked, help=why)
    c[5].button("Delete", key="rep_delete", on_click=_act, args=("saved", _delete), disabled=locked, help=why)


def import_tab() -> None:
    _show_msg("import")
    up = st.file_uploader("A Kneepoint report (.html) or scenarios (.json)", type=["html", "htm", "json"],
                          key="rep_import", help=f"at most {REPORT_MAX_BYTES // 2**20} MB")
    if up is None:
        return
    try:
        restored = _uploaded_scenarios(up)
    except ReportError as e:
        st.error(str(e))
        return
    show_table(pd.DataFrame([{"name": s.name, "model": s.model, "hardware": hardware(s)} for s in restored]),
                 key="rep_import_table")
    c = st.columns(2)
    c[0].button(f"Restore {len(restored)} as pinned designs", key="rep_restore", on_click=_act,
                args=("import", _restore))
    if c[1].button("Open the first in Design", key="rep_import_open"):
        st.switch_page("pages/design.py", query_params={"s": encode(restored[0])})


tab_report, tab_saved, tab_import = st.tabs(["Report", "Saved scenarios", "Import a report"])
with tab_report:
    report_tab()
with tab_saved:
    saved_tab()
with tab_import:
    import_tab()
