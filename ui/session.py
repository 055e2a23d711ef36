"""Process-wide resources for the Streamlit app (cached once per server process), and each session's view of them.

Outside hosted mode every session reads and writes the one store of the process, as `make run` does. In hosted
mode (engine.hosting) the process-wide store is shared read-only and each session works on its own overlay of
it, kept in that session's state, so one visitor's imports never show up for another.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from engine.hosting import SECRET_HOSTED, SECRET_PASSWORD, HostingSettings, SettingsError, hosting_settings
from engine.profiles import ProfileBook
from engine.store import Store
from engine.store.overlay import SessionOverlay
from ui.text import md

_OVERLAY = "_kneepoint_overlay"  # session_state key of this session's overlay (hosted mode)
# Streamlit's client.showErrorDetails when hosted: an unexpected exception shows a generic message, its type,
# message and trace go to the server log only (a trace shows code and paths to any visitor).
HOSTED_ERROR_DETAILS = "none"


def _secrets() -> dict:
    """The hosting keys of st.secrets; {} when the app has no secrets file."""
    try:
        return {k: st.secrets[k] for k in (SECRET_HOSTED, SECRET_PASSWORD) if k in st.secrets}
    except FileNotFoundError:  # Streamlit's "no secrets" error; it is also raised for a file it cannot parse
        present = [f for f in st.get_option("secrets.files") if Path(f).exists()]
        if present:  # refuse rather than run without the password the file may hold
            raise SettingsError(f"the secrets file {present[0]} cannot be read; check its TOML syntax") from None
        return {}


def hosting() -> HostingSettings:
    """This deployment's hosting settings (engine.hosting), from st.secrets and the environment; SettingsError
    names a bad value."""
    return hosting_settings(secrets=_secrets())


def hide_error_details_when_hosted() -> None:
    """In hosted mode, visitors never see a traceback (client.showErrorDetails = HOSTED_ERROR_DETAILS); `make run`
    keeps Streamlit's full details for development. Settings that cannot be read count as hosted: the gate then
    keeps the app closed and says why."""
    try:
        hosted = hosting().hosted
    except SettingsError:
        hosted = True
    if hosted:
        st.set_option("client.showErrorDetails", HOSTED_ERROR_DETAILS)


@st.cache_resource(show_spinner="Building the profile database from the seed tables...")
def _shared_store(hosted: bool) -> Store:
    return Store.hosted() if hosted else Store()


def get_store() -> Store:
    """The store this session reads and writes: the process's store, or in hosted mode this session's overlay."""
    hosted = hosting().hosted
    shared = _shared_store(hosted)
    if not hosted:
        return shared
    view = st.session_state.get(_OVERLAY)
    if view is None or view.base is not shared:  # first call of the session, or the shared store was reopened
        view = st.session_state[_OVERLAY] = shared.overlay()
    return view


@st.cache_resource(max_entries=4, show_spinner=False)
def _book(_store: Store, version: tuple) -> ProfileBook:
    return ProfileBook.from_store(_store)


@st.cache_data(max_entries=16, show_spinner=False)
def _counts(_store: Store, version: tuple) -> dict[str, int]:
    """Rows per table of the store's data at `version` (the sidebar shows them on every rerun: 14 queries)."""
    return _store.counts()


def get_book() -> ProfileBook:
    """The service-time model over the store's current data (rebuilt after an import)."""
    store = get_store()
    return _book(store, store.version())


def sidebar_store_info(store: Store, place=None) -> None:
    """Show which database is in use and how many rows each table holds, in `place` (default: the sidebar).

    The path is inline code in a caption, not st.code: st.code makes a first visit's browser fetch and run Streamlit's
    1.6 MB syntax highlighter. The counts are a Markdown table, not st.dataframe: the browser renders the sidebar
    before the page, so a sidebar dataframe put Streamlit's table component (1.3 MB of scripts, some 30 files) at the
    head of the browser's six-connection download queue, ahead of the page's own metric and chart components, even
    though app.py fills this in after the page (benchmarks/page_render_trace.py)."""
    with place or st.sidebar:
        st.caption("Profile database")
        st.caption(f"`{store.path}`")
        if store.rebuilt_because:
            st.caption(f"Built at start-up: {md(store.rebuilt_because)}.")
        if isinstance(store, SessionOverlay):
            st.caption("Shared and read-only: files you import stay in this browser session and go when it ends.")
        counts = _counts(store, store.version())
        st.markdown("| Table | Rows |\n|:--|--:|\n" + "\n".join(f"| {md(t)} | {n:,} |" for t, n in counts.items()))

