"""Issue 12 item 6: an FPGA request completes as its board does, not by the GPU path's spin-wait."""

import pytest

from engine.analytic import Context, evaluate
from engine.fpga.model import board


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def eif(threads, **rpc):
    return {"model": "resnet50", "fpga": {"boards": 1, "threads_per_accelerator": threads, "ms_per_request": 10.0},
            "preprocessing": {"device": "none"}, **({"rpc": rpc} if rpc else {})}


def test_more_tenants_serve_more_when_completion_holds_no_core(ctx):
    # before: spin completion held a host core for each request's whole FPGA time, so 48 tenants (slower
    # threads) served 2,379 req/s against 2,629 for 32
    e32, e48 = evaluate(eif(4), ctx), evaluate(eif(6), ctx)
    assert e48.capacity_rps > e32.capacity_rps
    assert e48.bottleneck == "fpga"
    assert board("intel-pac-a10").completion == "blocking"


def test_an_explicit_rpc_completion_still_wins(ctx):
    spin = evaluate(eif(6, completion="spin"), ctx)
    assert spin.bottleneck == "rpc" and spin.capacity_rps < evaluate(eif(6), ctx).capacity_rps
