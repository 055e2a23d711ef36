"""Process-wide resources for the Streamlit app (cached once per server process)."""

from __future__ import annotations

import streamlit as st

from engine.profiles import ProfileBook
from engine.store import Store


@st.cache_resource(show_spinner="Building the profile database from the seed tables...")
def get_store() -> Store:
    return Store()


@st.cache_resource(max_entries=4, show_spinner=False)
def _book(_store: Store, version: tuple) -> ProfileBook:
    return ProfileBook.from_store(_store)


def get_book() -> ProfileBook:
    """The service-time model over the store's current data (rebuilt after an import)."""
    store = get_store()
    return _book(store, store.version())


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


@st.cache_data(max_entries=64, show_spinner=False)
def _partition_view(version: tuple, model: str, sku: str, partitions: tuple, precision, input_len, percentile: int,
                    threshold: float, cross_gpu: bool):
    from engine.profiles.views import compare_partitions

    return compare_partitions(get_book(), model, sku, list(partitions) or None, precision, input_len, percentile,
                              threshold, cross_gpu)


def partition_view(model: str, sku: str, partitions: list[str], precision=None, input_len=None, percentile=95,
                   threshold=0.8, cross_gpu=False):
    """Cached engine.profiles.views.compare_partitions over the current data."""
    return _partition_view(get_store().version(), model, sku, tuple(partitions), precision, input_len, percentile,
                           threshold, cross_gpu)
