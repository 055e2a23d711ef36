"""PCIe x16 link bandwidth by generation: one table for every stage that moves bytes over a link (RPC copies,
the FPGA DPU's traffic, an FPGA's cold start)."""

from __future__ import annotations

#: GB/s per direction of a x16 link (data/seed/rpc_figures.csv pcie_spec rows: Gen3 15.7, Gen4 31.5, Gen5 63);
#: Gen6 is 2 x Gen5 (64 GT/s a lane, twice Gen5's rate), an assumption: no row gives it.
PCIE_X16_GBPS: dict[int, float] = {3: 15.7, 4: 31.5, 5: 63.0, 6: 126.0}


def pcie_gbps(gen: int) -> float:
    """GB/s per direction of a x16 link of PCIe generation `gen` (3-6)."""
    if gen not in PCIE_X16_GBPS:
        raise ValueError(f"PCIe generation must be one of {sorted(PCIE_X16_GBPS)}, got {gen}")
    return PCIE_X16_GBPS[gen]
