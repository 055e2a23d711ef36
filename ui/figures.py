"""Plotly figures built once per their inputs and shared by every session of the server process.

A page reruns its whole script on every visit and every widget change, and building a Plotly figure (validating
each property) was about a third of a hosted first page load. `cached_figure(builder, *args)` returns the figure
`builder(*args)` built earlier for the same inputs (compared by their pickled bytes), else builds it now. The
figures are kept in a bounded cache (FIGURES, least recently used out) and never changed after they are built:
st.plotly_chart copies a figure (`to_dict`) before it serialises it, so sharing one between sessions is safe.
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any, Callable

import streamlit as st

#: figures kept for the whole process: a few per page for a few dozen recent designs (tens of kB each)
FIGURES = 128


@st.cache_resource(max_entries=FIGURES, show_spinner=False)
def _figure(builder: str, inputs: str, _build: Callable[[], Any]) -> Any:
    return _build()


def cached_figure(builder: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`builder(*args, **kwargs)`, a figure, built once per its inputs (see the module's docstring). Do not change
    the figure returned: other sessions are shown the same object."""
    try:
        blob = pickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):  # inputs that cannot be compared: built every time
        return builder(*args, **kwargs)
    return _figure(f"{builder.__module__}.{builder.__qualname__}", hashlib.sha256(blob).hexdigest(),
                   lambda: builder(*args, **kwargs))
