"""Cost model: CAPEX + energy OPEX = TCO, queries per dollar and per joule (DESIGN.md section 5 "Cost").

PREBA seed section 6.3: CAPEX = server node + GPUs + FPGA cards; OPEX = power x time x electricity
price ($0.139/kWh); time = 3 years; cost-efficiency = throughput x time / TCO, which is exactly
queries per dollar (`preba_cost_efficiency` equals `queries_per_usd`). Section 6.2: power per
device rises with utilisation. Here power = idle + utilisation x (TDP - idle) per device, summed,
times PUE at the wall (PREBA states no PUE: set pue=1 to match it). MIG slices share a GPU: cost is
per physical GPU, never per slice. Units: USD, W, kWh, seconds, queries per second.

Defaults (price_defaults) come from the prices_power / gpus tables where a row exists, with the
row's source; where the tables are thin the value is an assumption and says so (`assumed=True`).
"""

import math
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine.rows import as_records, missing
from engine.vocab import CostBasis

HOURS_PER_YEAR = 8760.0  # 365 days
GPUS_PER_SERVER = 8  # DGX-style chassis (assumption for splitting many GPUs into servers)
#: idle/TDP for GPUs: A100-SXM4-80GB with MIG on idles at P0 at 85 W of 400 W
#: (github.com/NVIDIA/DCGM/issues/152), A100-SXM4-40GB MIG on ~50 W (github.com/NVIDIA/dcgm-exporter/issues/464)
GPU_IDLE_FRACTION = 0.2
OTHER_IDLE_FRACTION = 0.3  # assumption for CPUs and FPGA cards (static power of a loaded card)
HOST_CPU_TDP_W = 180.0  # assumption: AMD EPYC 7502 (PREBA section 5 server), AMD spec; no table row
HOST_PLATFORM_W = 100.0  # assumption: DRAM, board, fans, disks of one server, constant
NIC_W, SMARTNIC_W = 20.0, 75.0  # assumptions: ConnectX-class NIC, BlueField-class SmartNIC
NIC_PRICE_USD = 800.0  # assumption: 100 GbE NIC
SMARTNIC_COST_RATIO = 4.0  # SplitRPC seed Sec 3.1.1 (rpc_figures): SmartNIC costs 4x a P2P NIC
DPU_PRICE_USD = 4000.0  # assumption: Alveo U55C-class FPGA card; no price row in prices_power
FPGA_BOARD_PRICE_USD = 4000.0  # assumption: Intel PAC-class inference board, priced as the DPU card (no price row)
#: purchase prices for GPUs without a price row (assumptions, override with cost.gpu_price_usd)
ASSUMED_GPU_PRICE_USD = {"V100": 4000.0, "T4": 2000.0, "A30": 5000.0, "L4": 2500.0}


COST_BASIS_NAMES = {CostBasis.SLA_BOUNDED: "the SLA-bounded throughput",
                    CostBasis.CAPACITY: "the capacity (PREBA's like-for-like basis)",
                    CostBasis.OFFERED: "the offered load (up to capacity)"}


class PricedRate(BaseModel):
    """The throughput (requests/s) a design is priced at, the basis named, and why it has no value if none."""

    model_config = ConfigDict(frozen=True)

    throughput_rps: float
    basis: str
    no_value_reason: Optional[str]  # set when the design serves nothing on this basis (no queries per dollar)


def priced_rate(basis: CostBasis | str, sla_bounded_rps: float, capacity_rps: float,
                offered_rps: float) -> PricedRate:
    """The rate a design is priced at on `basis` (requests/s); a design meeting no SLA has no SLA-bounded rate,
    so no queries per dollar on that basis (PREBA 6.3 prices throughput x time / TCO)."""
    basis = CostBasis(basis)
    name = COST_BASIS_NAMES[basis]
    if basis == CostBasis.SLA_BOUNDED:
        rate = sla_bounded_rps
    elif basis == CostBasis.CAPACITY:
        rate = capacity_rps
    else:
        rate = min(offered_rps, capacity_rps)
    if rate > 0 and math.isfinite(rate):
        return PricedRate(throughput_rps=float(rate), basis=name, no_value_reason=None)
    why = ("no load meets the SLA" if basis == CostBasis.SLA_BOUNDED else "the design serves no load")
    return PricedRate(throughput_rps=0.0, basis=name, no_value_reason=why)


class Default(BaseModel):
    """One default: value, unit, where it came from, and whether it is an assumption."""

    model_config = ConfigDict(frozen=True)

    value: float
    unit: str
    source: str
    assumed: bool = False

    def label(self) -> str:
        v = f"{self.value:,.0f}" if abs(self.value) >= 100 else f"{self.value:.4g}"
        return f"default: {v} {self.unit} ({'assumption: ' if self.assumed else ''}{self.source})"


class CostInputs(BaseModel):
    """Everything tco() needs. Counts are physical devices; powers per device (host: per server)."""

    # allow_inf_nan=False: a NaN or infinite price or power would turn TCO and queries per dollar into NaN
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    throughput_rps: float = Field(ge=0, description="sustained queries per second")
    years: float = Field(3.0, gt=0)
    usd_per_kwh: float = Field(0.139, ge=0)
    pue: float = Field(1.5, ge=1)
    servers: int = Field(1, ge=1)
    server_price_usd: float = Field(ge=0, description="per server: chassis, CPUs, memory (no GPUs)")
    gpus: int = Field(ge=0)
    gpu_price_usd: float = Field(ge=0)
    dpus: int = Field(0, ge=0, description="FPGA preprocessing cards")
    dpu_price_usd: float = Field(0.0, ge=0)
    nics: int = Field(0, ge=0)
    nic_price_usd: float = Field(0.0, ge=0)
    fpgas: int = Field(0, ge=0, description="FPGA inference boards (EIF backend, engine.fpga)")
    fpga_price_usd: float = Field(0.0, ge=0)
    fpga_tdp_w: float = Field(0.0, ge=0)
    fpga_idle_w: float = Field(0.0, ge=0)
    fpga_util: float = Field(0.0, ge=0, le=1)
    gpu_tdp_w: float = Field(ge=0)
    gpu_idle_w: float = Field(ge=0)
    host_max_w: float = Field(ge=0, description="per server at full CPU load")
    host_idle_w: float = Field(ge=0)
    dpu_tdp_w: float = Field(0.0, ge=0)
    dpu_idle_w: float = Field(0.0, ge=0)
    nic_w: float = Field(0.0, ge=0, description="per NIC, constant")
    gpu_util: float = Field(ge=0, le=1)
    host_util: float = Field(ge=0, le=1)
    dpu_util: float = Field(0.0, ge=0, le=1)

    @model_validator(mode="after")
    def _idle_below_peak(self) -> "CostInputs":
        for dev, idle, peak in (("gpu", self.gpu_idle_w, self.gpu_tdp_w), ("host", self.host_idle_w, self.host_max_w),
                                ("dpu", self.dpu_idle_w, self.dpu_tdp_w), ("fpga", self.fpga_idle_w, self.fpga_tdp_w)):
            if idle > peak:
                raise ValueError(f"{dev} idle power {idle} W is above its peak {peak} W")
        return self


class CostResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    capex_usd: float
    capex_breakdown_usd: dict[str, float]
    it_power_w: float
    power_breakdown_w: dict[str, float]
    wall_power_w: float
    energy_kwh: float
    opex_usd: float
    tco_usd: float
    seconds: float
    queries: float
    queries_per_usd: float
    queries_per_joule: float
    preba_cost_efficiency: float
    notes: tuple[str, ...] = ()


def device_power_w(idle_w: float, peak_w: float, utilization: float) -> float:
    """Average power of one device: idle + utilisation x (peak - idle) (PREBA 6.2: power grows with load)."""
    return idle_w + min(max(utilization, 0.0), 1.0) * (peak_w - idle_w)


def tco(inputs: CostInputs) -> CostResult:
    """TCO over `years` and the efficiency metrics (PREBA 6.3). Pure; every number comes from `inputs`."""
    i = inputs
    capex = {"servers": i.servers * i.server_price_usd, "gpus": i.gpus * i.gpu_price_usd,
             "dpus": i.dpus * i.dpu_price_usd, "nics": i.nics * i.nic_price_usd}
    power = {"gpus": i.gpus * device_power_w(i.gpu_idle_w, i.gpu_tdp_w, i.gpu_util),
             "host": i.servers * device_power_w(i.host_idle_w, i.host_max_w, i.host_util),
             "dpus": i.dpus * device_power_w(i.dpu_idle_w, i.dpu_tdp_w, i.dpu_util),
             "nics": i.nics * i.nic_w}
    if i.fpgas:  # only FPGA designs carry the entry, so GPU results keep their keys
        capex["fpgas"] = i.fpgas * i.fpga_price_usd
        power["fpgas"] = i.fpgas * device_power_w(i.fpga_idle_w, i.fpga_tdp_w, i.fpga_util)
    it_w = sum(power.values())
    wall_w = it_w * i.pue
    hours = i.years * HOURS_PER_YEAR
    energy_kwh = wall_w * hours / 1000.0
    opex = energy_kwh * i.usd_per_kwh
    total = sum(capex.values()) + opex
    seconds = hours * 3600.0
    queries = i.throughput_rps * seconds
    per_usd = queries / total if total > 0 else math.inf
    per_joule = i.throughput_rps / wall_w if wall_w > 0 else math.inf
    notes = (f"{i.years:g} years x {HOURS_PER_YEAR:g} h; energy at the wall = IT power x PUE {i.pue:g}",
             "queries per dollar = throughput x time / TCO = PREBA's cost-efficiency metric (section 6.3)",
             "cost is per physical GPU: MIG slices share it")
    return CostResult(capex_usd=sum(capex.values()), capex_breakdown_usd=capex, it_power_w=it_w,
                      power_breakdown_w=power, wall_power_w=wall_w, energy_kwh=energy_kwh, opex_usd=opex,
                      tco_usd=total, seconds=seconds, queries=queries, queries_per_usd=per_usd,
                      queries_per_joule=per_joule, preba_cost_efficiency=per_usd, notes=notes)


# --------------------------------------------------------------------------- defaults

def _row(prices: list[dict], kind: str, *needles: str) -> Optional[dict]:
    """First row of `kind` whose item contains every needle (case-insensitive)."""
    return next((r for r in prices if r["kind"] == kind and all(n.lower() in str(r["item"]).lower() for n in needles)),
                None)


def _src(row: dict) -> str:
    return f"{row['item']}: {row['source'].split(' :: ')[0]}" + (f"; {row['note']}" if row.get("note") else "")


def _family(sku: str) -> str:
    for fam in ("H200", "H100", "A100", "A30", "V100", "T4", "L4"):
        if sku.upper().startswith(fam):
            return fam
    return sku


def _gpu_price(prices: list[dict], sku: str) -> Default:
    fam = _family(sku)
    if fam == "H100" and (r := _row(prices, "price_usd", "H100 (GPU)")) is not None:
        return Default(value=float(r["value"]), unit="USD", source=_src(r))
    if fam == "A100" and (r := _row(prices, "price_usd", "A100 80GB")) is not None:
        return Default(value=float(r["value"]), unit="USD", source=_src(r) + " (used/refurbished price"
                       + ("; no 40GB row, 80GB price used" if "40GB" in sku else "") + ")", assumed="40GB" in sku)
    if fam == "H200":
        h100 = _row(prices, "price_usd", "H100 (GPU)")
        h200_h, h100_h = _row(prices, "usd_per_gpu_hour", "H200"), _row(prices, "usd_per_gpu_hour", "H100 SXM")
        if h100 is not None and h200_h is not None and h100_h is not None:
            v = float(h100["value"]) * float(h200_h["value"]) / float(h100_h["value"])
            return Default(value=v, unit="USD", assumed=True, source=f"H100 price x cloud $/GPU-h ratio H200 "
                           f"{h200_h['value']:g} / H100 {h100_h['value']:g} (no H200 purchase price row)")
    if fam in ASSUMED_GPU_PRICE_USD:
        return Default(value=ASSUMED_GPU_PRICE_USD[fam], unit="USD", assumed=True, source="no price row")
    return Default(value=10000.0, unit="USD", assumed=True, source=f"no price row for {sku}")


def _gpu_power(gpus: Optional[list[dict]], prices: list[dict], sku: str) -> tuple[Default, Default]:
    tdp: Optional[Default] = None
    if gpus is not None and (g := next((r for r in gpus if r["sku"] == sku), None)) is not None:
        tdp = Default(value=float(g["tdp_w"]), unit="W", source=f"gpus.csv {sku}: {str(g['source']).split('; ')[-1]}")
        idle = g.get("idle_w")
        if not missing(idle):
            return tdp, Default(value=float(idle), unit="W", source=f"gpus.csv {sku} idle_w")
    if tdp is None:
        fam = _family(sku)
        r = _row(prices, "tdp_w", fam + (" SXM" if "SXM" in sku else ""))
        r = r if r is not None else _row(prices, "tdp_w", fam)
        tdp = (Default(value=float(r["value"]), unit="W", source=_src(r)) if r is not None
               else Default(value=300.0, unit="W", assumed=True, source=f"no TDP row for {sku}"))
    idle = Default(value=GPU_IDLE_FRACTION * tdp.value, unit="W", assumed=True,
                   source=f"{GPU_IDLE_FRACTION:g} x TDP: A100 with MIG on idles at 50-85 W of 400 W "
                          "(NVIDIA/DCGM#152, NVIDIA/dcgm-exporter#464)")
    return tdp, idle


def price_defaults(prices, gpu_sku: str, gpus=None, gpu_count: int = 1,
                   smartnic: bool = False) -> dict[str, Default]:
    """Default prices, powers and tariff for a design, each with its source (for 'default: $X (source)').

    prices: the prices_power table; gpus: the gpus table (TDP, idle), each as rows (Store.records) or a
    DataFrame; keys match CostInputs fields (plus usd_per_kwh and years, PREBA 6.3 rows).
    """
    prices, gpus = as_records(prices), (None if gpus is None else as_records(gpus))
    out: dict[str, Default] = {"gpu_price_usd": _gpu_price(prices, gpu_sku)}
    dgx, h100 = _row(prices, "price_usd", "DGX H100 (8x"), _row(prices, "price_usd", "H100 (GPU)")
    per_gpus = min(max(gpu_count, 1), GPUS_PER_SERVER)
    if dgx is not None and h100 is not None:
        slot = (float(dgx["value"]) - 8 * float(h100["value"])) / 8
        out["server_price_usd"] = Default(value=slot * per_gpus, unit="USD", source=(
            f"host share of a DGX H100: ({dgx['value']:,.0f} - 8 x {h100['value']:,.0f}) / 8 = {slot:,.0f} USD per "
            f"GPU slot x {per_gpus} ({_src(dgx)})"))
    else:
        out["server_price_usd"] = Default(value=6250.0 * per_gpus, unit="USD", assumed=True,
                                          source="6250 USD per GPU slot (no DGX price row)")
    out["dpu_price_usd"] = Default(value=DPU_PRICE_USD, unit="USD", assumed=True,
                                   source="Alveo U55C-class card; no FPGA price row")
    nic = NIC_PRICE_USD * (SMARTNIC_COST_RATIO if smartnic else 1.0)
    out["nic_price_usd"] = Default(value=nic, unit="USD", assumed=True, source="100 GbE NIC 800 USD"
                                   + (" x 4 for a SmartNIC (SplitRPC Sec 3.1.1)" if smartnic else ""))
    out["gpu_tdp_w"], out["gpu_idle_w"] = _gpu_power(gpus, prices, gpu_sku)
    out["host_max_w"] = Default(value=HOST_CPU_TDP_W + HOST_PLATFORM_W, unit="W", assumed=True,
                                source="EPYC 7502 180 W (PREBA's host) + 100 W platform")
    out["host_idle_w"] = Default(value=OTHER_IDLE_FRACTION * HOST_CPU_TDP_W + HOST_PLATFORM_W, unit="W",
                                 assumed=True, source="0.3 x CPU TDP + 100 W platform")
    u50 = _row(prices, "tdp_w", "Alveo U50")
    dpu_w = float(u50["value"]) if u50 is not None else 75.0
    out["dpu_tdp_w"] = Default(value=dpu_w, unit="W", assumed=u50 is None, source=(
        (_src(u50) + "; U55C power not in the table") if u50 is not None else "U50 75 W envelope"))
    out["dpu_idle_w"] = Default(value=OTHER_IDLE_FRACTION * dpu_w, unit="W", assumed=True, source="0.3 x card power")
    out["nic_w"] = Default(value=SMARTNIC_W if smartnic else NIC_W, unit="W", assumed=True,
                           source="BlueField-class SmartNIC" if smartnic else "ConnectX-class NIC")
    kwh, life = _row(prices, "usd_per_kwh", "PREBA"), _row(prices, "lifetime_years", "PREBA")
    out["usd_per_kwh"] = Default(value=float(kwh["value"]) if kwh is not None else 0.139, unit="USD/kWh",
                                 source=_src(kwh) if kwh is not None else "PREBA section 6.3")
    out["years"] = Default(value=float(life["value"]) if life is not None else 3.0, unit="years",
                           source=_src(life) if life is not None else "PREBA section 6.3")
    return out


def fpga_price_defaults(prices, board_power_w: float, boards: int = 1,
                        smartnic: bool = False) -> dict[str, Default]:
    """price_defaults for a design on FPGA inference boards: no GPUs, `boards` cards in the GPU slots.

    board_power_w: the board's total power (engine.fpga.model.FpgaBoard, a datasheet row in rpc_figures);
    idle is OTHER_IDLE_FRACTION of it, the price an assumption (FPGA_BOARD_PRICE_USD).
    """
    out = price_defaults(prices, "none", None, boards, smartnic=smartnic)
    out["gpu_price_usd"] = Default(value=0.0, unit="USD", source="no GPUs: FPGA boards serve the model")
    out["gpu_tdp_w"] = Default(value=0.0, unit="W", source="no GPUs")
    out["gpu_idle_w"] = Default(value=0.0, unit="W", source="no GPUs")
    out["fpga_price_usd"] = Default(value=FPGA_BOARD_PRICE_USD, unit="USD", assumed=True,
                                    source="Intel PAC-class board; no FPGA price row (as the DPU card)")
    out["fpga_tdp_w"] = Default(value=board_power_w, unit="W", source="board power (engine.fpga.model BOARDS)")
    out["fpga_idle_w"] = Default(value=OTHER_IDLE_FRACTION * board_power_w, unit="W", assumed=True,
                                 source=f"{OTHER_IDLE_FRACTION:g} x board power")
    return out


def servers_for(gpu_count: int) -> int:
    return max(1, math.ceil(gpu_count / GPUS_PER_SERVER))


def inputs_from_spec(spec, defaults: dict[str, Default], *, throughput_rps: float, gpus: int,
                     gpu_util: float, host_util: float, dpus: int = 0, dpu_util: float = 0.0,
                     nics: int = 1, fpgas: int = 0, fpga_util: float = 0.0) -> CostInputs:
    """CostInputs from a scenario CostSpec: its explicit prices win, price_defaults() fill the rest
    (fpga_price_defaults() for FPGA boards, which take the GPUs' server slots)."""
    def pick(name: str) -> float:
        v = getattr(spec, name, None)
        return float(v) if v is not None else defaults[name].value

    servers = servers_for(gpus + fpgas)
    fpga = {} if not fpgas else dict(fpgas=fpgas, fpga_price_usd=pick("fpga_price_usd"), fpga_util=fpga_util,
                                     fpga_tdp_w=defaults["fpga_tdp_w"].value, fpga_idle_w=defaults["fpga_idle_w"].value)
    return CostInputs(throughput_rps=throughput_rps, years=spec.years, usd_per_kwh=spec.usd_per_kwh, pue=spec.pue,
                      servers=servers, server_price_usd=pick("server_price_usd"), gpus=gpus,
                      gpu_price_usd=pick("gpu_price_usd"), dpus=dpus, dpu_price_usd=pick("dpu_price_usd"),
                      nics=nics, nic_price_usd=pick("nic_price_usd"), gpu_tdp_w=defaults["gpu_tdp_w"].value,
                      gpu_idle_w=defaults["gpu_idle_w"].value, host_max_w=defaults["host_max_w"].value,
                      host_idle_w=defaults["host_idle_w"].value, dpu_tdp_w=defaults["dpu_tdp_w"].value,
                      dpu_idle_w=defaults["dpu_idle_w"].value, nic_w=defaults["nic_w"].value,
                      gpu_util=gpu_util, host_util=host_util, dpu_util=dpu_util, **fpga)
