"""Kneepoint: inference-server design explorer. Run with `make run` (or `streamlit run app.py`)."""

import engine  # noqa: F401  (first: one BLAS thread, set before numpy loads; engine/__init__.py)
import streamlit as st

from engine.seed.reader import SeedError
from engine.store import StoreError
from ui import gate
from ui.session import get_store, hide_error_details_when_hosted, sidebar_store_info
from ui.text import md

st.set_page_config(page_title="Kneepoint", page_icon=":material/insights:", layout="wide")
hide_error_details_when_hosted()  # before any page can fail

# URL paths differ from the file names on purpose: Streamlit's legacy router claims /<file stem> for
# files in pages/ and would serve them without this entry script (no navigation, no sidebar).
pages = [
    st.Page("pages/design.py", title="Design", icon=":material/tune:", url_path="designer", default=True),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare-designs"),
    st.Page("pages/search.py", title="Search", icon=":material/travel_explore:", url_path="design-search"),
    st.Page("pages/partitioning.py", title="Partitioning", icon=":material/grid_view:", url_path="partition-plans"),
    st.Page("pages/preprocessing.py", title="Preprocessing", icon=":material/memory:", url_path="preprocessing-view"),
    st.Page("pages/rpc.py", title="RPC", icon=":material/lan:", url_path="rpc-path"),
    st.Page("pages/tenancy.py", title="Tenancy", icon=":material/apartment:", url_path="tenants"),
    st.Page("pages/cost.py", title="Cost", icon=":material/payments:", url_path="cost-model"),
    st.Page("pages/profiles.py", title="Profiles", icon=":material/monitoring:", url_path="profile-store"),
    st.Page("pages/report.py", title="Report", icon=":material/description:", url_path="reports"),
    st.Page("pages/papers.py", title="Papers", icon=":material/science:", url_path="seed-papers"),
]
# A hosted demo may want a password first (ui/gate.py); until it is given no page is listed or run.
unlocked = gate.unlocked()
page = st.navigation(pages, position="sidebar" if unlocked else "hidden")
if not unlocked:
    gate.ask_password()  # stops the script
try:
    store = get_store()
except (SeedError, StoreError, OSError) as e:  # bad seed row, unreadable file: say so, no trace
    st.error(f"The profile database could not be opened: {md(e)}")
    st.stop()
# the database's details go in the sidebar after the page has drawn its own elements: a first visit's browser then
# draws the page before it loads the table component the counts need (benchmarks/page_render_trace.py)
details = st.sidebar.container()
try:
    page.run()
finally:  # also when the page stops early (st.stop) or fails
    sidebar_store_info(store, details)
