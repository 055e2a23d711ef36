"""The PCIe table is declared once (engine/stages/pcie.py) and agrees with the seed rows it cites."""

import csv
from pathlib import Path

import pytest

from engine.stages.pcie import PCIE_X16_GBPS, pcie_gbps
from engine.stages.rpc import RpcComponents, rpc_breakdown

ROOT = Path(__file__).resolve().parents[1]


def test_table_matches_the_seed_rows():
    rows = [r for r in csv.DictReader(open(ROOT / "data/seed/rpc_figures.csv")) if r["category"] == "pcie_spec"]
    by_gen = {int(r["item"].split("Gen")[1].split()[0]): float(r["value"]) for r in rows}
    assert by_gen and all(r["unit"] == "GB/s" for r in rows)
    assert {gen: PCIE_X16_GBPS[gen] for gen in by_gen} == by_gen
    assert PCIE_X16_GBPS[6] == 2 * by_gen[5]  # the one generation without a row: twice Gen5's rate


def test_unknown_generation_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"\[3, 4, 5, 6\], got 7"):
        pcie_gbps(7)


def test_every_generation_a_gpu_row_may_have_prices_an_rpc():
    # a GPU row allows pcie_gen 3-6 (engine/seed/records.py); the RPC path once knew only 3-5
    times = [rpc_breakdown(RpcComponents(pcie_gen=gen, copy_method="gpu-dma"), 602_112, 4_000, 50, 1e-3).data_movement_s
             for gen in (3, 4, 5, 6)]
    assert all(a > b for a, b in zip(times, times[1:]))  # a faster link, a shorter copy
