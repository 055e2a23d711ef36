"""Every model on every page, on GPUs with and without its profiles: a message, never a traceback.

Most (model, GPU) pairs have no latency points of their own (the seed sources publish a few GPUs per
model), so each page must explain what is missing rather than raise.
"""

import pytest

from tests.conftest import ROOT
from tests.pagetest import open_page

GPUS = ["A100-SXM4-80GB", "H100-SXM5-80GB", "T4-16GB"]  # MIG with points, MIG without points, no MIG


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


def test_an_unanswerable_design_is_explained_on_every_page():
    at = open_page("design.py", timeout=300)
    at.selectbox(key="d_model").set_value("alexnet").run()  # published on V100 only
    assert any("cannot be evaluated" in e.value and "points exist on V100-16GB" in e.value for e in at.error)
    at.button(key="d_pin").click().run()
    for page in ("compare", "search", "partitioning", "preprocessing", "rpc", "tenancy", "cost", "profiles", "report"):
        at.switch_page(str(ROOT / "pages" / f"{page}.py")).run()
        assert not at.exception, (page, at.exception)
