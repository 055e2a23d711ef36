"""Process-wide resources for the Streamlit app (cached once per server process)."""

from __future__ import annotations

import streamlit as st

from engine.store import Store


@st.cache_resource(show_spinner="Building the profile database from the seed tables...")
def get_store() -> Store:
    return Store()


def sidebar_store_info(store: Store) -> None:
    """Show which database is in use and how many rows each table holds."""
    with st.sidebar:
        st.caption("Profile database")
        st.code(str(store.path), language=None)
        if store.rebuilt_because:
            st.caption(f"Built at start-up: {store.rebuilt_because}.")
        counts = store.counts()
        st.dataframe({"table": list(counts), "rows": list(counts.values())}, hide_index=True,
                     key="sidebar_counts")
