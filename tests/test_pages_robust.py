"""Every model on every page, on GPUs with and without its profiles: a message, never a traceback.

Most (model, GPU) pairs have no latency points of their own (the seed sources publish a few GPUs per
model): each page answers them on estimated curves, and a design nothing can price (a user's model with no
operator costs, on a GPU it was not measured on) is explained rather than raised.
"""

import pytest

from tests.conftest import ROOT
from tests.usermodel import MEASURED_ON, import_measured_on_one_gpu
from tests.pagetest import open_page

GPUS = ["A100-SXM4-80GB", "H100-SXM5-80GB", "T4-16GB"]  # MIG with points, MIG estimated, no MIG


def _every_model(at, key: str, gpu_key: str | None = None) -> list[str]:
    failed = []
    for gpu in (GPUS if gpu_key else [None]):
        if gpu_key:
            at.selectbox(key=gpu_key).set_value(gpu).run()
        for model in at.selectbox(key=key).options:
            at.selectbox(key=key).set_value(model).run()
            if at.exception:
                failed.append(f"{model} on {gpu}: {at.exception[0].message[:120]}")
    return failed


@pytest.mark.parametrize("page,model_key,gpu_key", [
    ("design.py", "d_model", "d_gpu"), ("preprocessing.py", "pp_model", None), ("rpc.py", "rpc_model", None),
    ("tenancy.py", "ten_model", "ten_share_gpu"), ("partitioning.py", "par_model", None)])
def test_no_model_raises(page, model_key, gpu_key):
    at = open_page(page, timeout=300)
    assert _every_model(at, model_key, gpu_key) == []


@pytest.fixture
def user_model(store):
    """tests.usermodel's model, imported for one test and removed after it."""
    yield import_measured_on_one_gpu(store)
    store.clear_user_rows("latency_points")


def test_an_unanswerable_design_is_explained_on_every_page(user_model):
    at = open_page("design.py", timeout=300)
    at.selectbox(key="d_model").set_value(user_model).run()
    at.selectbox(key="d_gpu").set_value("A100-SXM4-80GB").run()
    assert any("cannot be evaluated" in e.value and f"points exist on {MEASURED_ON}" in e.value for e in at.error)
    at.button(key="d_pin").click().run()
    for page in ("compare", "search", "partitioning", "preprocessing", "rpc", "tenancy", "cost", "profiles", "report"):
        at.switch_page(str(ROOT / "pages" / f"{page}.py")).run()
        assert not at.exception, (page, at.exception)
