"""Cached engine calls for the Search page (ui.compute.engine_call: keyed by the space's JSON and the data version)."""

from __future__ import annotations

from engine.executors import make_executor
from engine.search import expand, parse_space, search
from ui.compute import engine_call
from ui.design_state import context
from ui.session import get_book, hosting

SIM_REQUESTS = 20_000  # per simulator check of a top design: tails within a few percent in about a second


@engine_call(entries=32)
def space_shape(space_json: str) -> tuple[int, tuple[int, ...]]:
    """(designs, alternatives per axis) of a space; SearchError names what is wrong. Cached: expanding every
    maximal layout validates each one, about 0.1 s that a rerun should not repeat."""
    grid = expand(parse_space(space_json), get_book())
    return grid.size, tuple(len(axis) for axis in grid.axes)


@engine_call(progress="searching...", kind="search", unkeyed=("executor",))
def search_cached(space_json: str, confirm_top: int, executor: str = "local", *, progress=None):
    """engine.search.search over the space, computed once per inputs for all sessions, with a progress bar.
    local: one process, since forking a Streamlit server (threads, sockets) is not safe; ray: the cluster of
    KNEEPOINT_RAY_ADDRESS (or a Ray started here). Either gives the same answer, so the executor is not part
    of the key."""
    address = hosting().ray_address if executor == "ray" else None
    return search(space_json, context(), workers=1, progress=progress, confirm_top=confirm_top,
                  sim_requests=SIM_REQUESTS, executor=make_executor(executor, workers=1, address=address))
