"""The cost view of a design: CAPEX/OPEX, TCO over the years, queries per dollar and per joule, sensitivities.

PREBA (seed) section 6.3: TCO = CAPEX (server, GPUs, FPGA cards) + OPEX (power x time x electricity price,
$0.139/kWh, 3 years); cost-efficiency = throughput x time / TCO (= queries per dollar); section 6.2: power
grows with utilisation, energy-efficiency = throughput / power (= queries per joule). engine.cost holds the
formulas and the default prices with their sources; this module applies them to an analytic design at the
throughput it sustains, and sweeps the electricity price and the utilisation. Units: USD, W, kWh, requests/s.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine.analytic import Context, at_rate, build_design, capacity, sla_bounded_rate
from engine.analytic.design import Design
from engine.cost import (HOURS_PER_YEAR, CostInputs, CostResult, Default, PricedRate, inputs_from_spec,
                         price_defaults, priced_rate, servers_for, tco)
from engine.scenario import Scenario
from engine.vocab import CostBasis, PreprocessDevice, RpcPreset
from engine.stages.dpu import DPU_CUS_PER_CARD
from engine.rows import as_records
from engine.studies import model_row, require_gpu, variant

#: utilisations (offered load / capacity) of the utilisation sweep
UTILIZATIONS = tuple(float(u) for u in np.round(np.linspace(0.05, 1.0, 20), 2))
#: the electricity sweep runs from 0 to this multiple of the larger of the design's price and the priciest tariff
KWH_SPAN = 1.5
KWH_POINTS = 21
#: CostSpec fields a user may edit, in the order the page shows them
PRICE_FIELDS = ("gpu_price_usd", "server_price_usd", "dpu_price_usd", "nic_price_usd")


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True)


class YearRow(_Row):
    """Cumulative spend by the end of `year` (USD): purchases at year 0, energy as it is used."""

    year: float
    capex_usd: dict[str, float]
    energy_usd: float
    total_usd: float


class KwhRow(_Row):
    usd_per_kwh: float
    tco_usd: float
    queries_per_usd: Optional[float]  # None when the design serves nothing on the cost basis


class UtilRow(_Row):
    """The design at `utilization` x its capacity (the devices' power follows their own utilisation)."""

    utilization: float
    throughput_rps: float
    tco_usd: float
    wall_power_w: float
    queries_per_usd: float
    queries_per_joule: float
    meets_sla: bool


class Tariff(_Row):
    """A published electricity price from prices_power, and the design's queries per dollar at it."""

    item: str
    usd_per_kwh: float
    source: str
    queries_per_usd: Optional[float]  # None when the design serves nothing on the cost basis


class DeviceCost(_Row):
    """The same design with another preprocessing device (PREBA Figures 20-21: CPU baseline vs DPU)."""

    device: str
    throughput_rps: float
    tco_usd: float
    wall_power_w: float
    queries_per_usd: Optional[float]  # None when this variant meets the SLA at no load
    queries_per_joule: Optional[float]


class CostStudy(_Row):
    throughput_rps: float
    basis: str  # which throughput the cost is priced at, in words
    no_value_reason: Optional[str]  # why queries per dollar/joule have no value (None when they have one)
    queries_per_usd: Optional[float]  # result.queries_per_usd, None when the design serves nothing on the basis
    queries_per_joule: Optional[float]
    capacity_rps: float
    sla_bounded_rps: float
    priced_utilization: float  # throughput_rps / capacity_rps
    inputs: CostInputs
    result: CostResult
    defaults: dict[str, Default]
    years: tuple[YearRow, ...]
    kwh: tuple[KwhRow, ...]
    utilization: tuple[UtilRow, ...]
    tariffs: tuple[Tariff, ...]
    devices: tuple[DeviceCost, ...]
    notes: tuple[str, ...]


def cost_defaults(scenario: Scenario, ctx: Context) -> dict[str, Default]:
    """engine.cost.price_defaults for the design's GPUs and NIC (a SmartNIC on the SmartNIC presets)."""
    require_gpu(scenario)
    smartnic = scenario.rpc.preset in (RpcPreset.LYNX_SNIC, RpcPreset.SPLITRPC_SNIC)
    return ctx.memo(("prices", scenario.gpu.sku, scenario.gpu.count, smartnic),
                    lambda: price_defaults(ctx.prices_power, scenario.gpu.sku, ctx.gpus, scenario.gpu.count,
                                           smartnic=smartnic))


def cost_inputs(design: Design, ctx: Context, throughput_rps: float) -> CostInputs:
    """CostInputs of a design at a throughput: device utilisations from the analytic engine at that rate,
    prices from the scenario where set, else cost_defaults (as engine.analytic.evaluate prices an Evaluation)."""
    sc = design.scenario
    pt = at_rate(design, max(throughput_rps, 1e-6))
    free = sc.host.free_cores
    host_util = min(1.0, sum(min(throughput_rps, s.capacity_rps) * s.host_cpu_s for s in design.host_stages) / free)
    dpu = sc.preprocessing.device == PreprocessDevice.DPU
    dpu_util = next((s.utilization for s in pt.stages if s.name.startswith("preprocess:dpu")), 0.0)
    return inputs_from_spec(sc.cost, cost_defaults(sc, ctx), throughput_rps=throughput_rps, gpus=sc.gpu.count,
                            gpu_util=min(1.0, pt.gpu.utilization), host_util=host_util,
                            dpus=math.ceil(sc.preprocessing.units / DPU_CUS_PER_CARD) if dpu else 0,
                            dpu_util=min(1.0, dpu_util), nics=servers_for(sc.gpu.count))


def priced_throughput(design: Design) -> tuple[PricedRate, float, float]:
    """(priced rate, capacity, SLA-bounded): the SLA-bounded throughput, the one basis the Design, Compare and
    Cost pages price at (engine.cost.priced_rate); a design meeting the SLA at no load has no queries per dollar."""
    cap = capacity(design)[0]
    sla = sla_bounded_rate(design)
    return priced_rate(CostBasis.SLA_BOUNDED, sla, cap, design.scenario.workload.arrival.rate_rps), cap, sla


def _valued(x: float, priced: PricedRate) -> Optional[float]:
    return None if priced.no_value_reason is not None else x


def tco_over_years(inputs: CostInputs, result: CostResult) -> tuple[YearRow, ...]:
    """Cumulative spend at each whole year and at the end of the period (CAPEX up front, energy linear in time)."""
    ends = sorted({*range(0, int(math.floor(inputs.years)) + 1), inputs.years})
    return tuple(YearRow(year=float(y), capex_usd=dict(result.capex_breakdown_usd),
                         energy_usd=result.opex_usd * y / inputs.years,
                         total_usd=result.capex_usd + result.opex_usd * y / inputs.years) for y in ends)


def _at_price(inputs: CostInputs, usd_per_kwh: float) -> CostResult:
    return tco(CostInputs.model_validate({**inputs.model_dump(), "usd_per_kwh": float(usd_per_kwh)}))


def kwh_sensitivity(inputs: CostInputs, top_usd_per_kwh: float, n: int = KWH_POINTS,
                    has_value: bool = True) -> tuple[KwhRow, ...]:
    """TCO and queries per dollar as the electricity price runs from 0 to `top` USD/kWh (PREBA 6.3's OPEX term);
    queries per dollar None when the design serves nothing on the cost basis (`has_value` False)."""
    rows = []
    for price in np.linspace(0.0, top_usd_per_kwh, n):
        r = _at_price(inputs, price)
        rows.append(KwhRow(usd_per_kwh=float(price), tco_usd=r.tco_usd,
                           queries_per_usd=r.queries_per_usd if has_value else None))
    return tuple(rows)


def utilization_sensitivity(design: Design, ctx: Context, sla_rps: float,
                            fractions: tuple[float, ...] = UTILIZATIONS) -> tuple[UtilRow, ...]:
    """Cost metrics with the design run at each fraction of its capacity (idle power is paid regardless)."""
    cap = capacity(design)[0]
    rows = []
    for u in fractions:
        rate = u * cap * (1 - 1e-9)  # at capacity exactly the queues are unstable; the powers are not
        r = tco(cost_inputs(design, ctx, rate))
        rows.append(UtilRow(utilization=u, throughput_rps=rate, tco_usd=r.tco_usd, wall_power_w=r.wall_power_w,
                            queries_per_usd=r.queries_per_usd, queries_per_joule=r.queries_per_joule,
                            meets_sla=rate <= sla_rps))
    return tuple(rows)


def tariffs(prices_power, inputs: CostInputs, has_value: bool = True) -> tuple[Tariff, ...]:
    """Published electricity prices (prices_power rows of kind usd_per_kwh), cheapest first, each with the
    design's queries per dollar at that price (None when the design serves nothing on the cost basis)."""
    rows = sorted((r for r in as_records(prices_power) if r["kind"] == "usd_per_kwh"), key=lambda r: r["value"])
    return tuple(Tariff(item=r["item"], usd_per_kwh=float(r["value"]), source=str(r["source"]).split(" :: ")[0],
                        queries_per_usd=_at_price(inputs, r["value"]).queries_per_usd if has_value else None)
                 for r in rows)


def _device_costs(scenario: Scenario, ctx: Context) -> tuple[DeviceCost, ...]:
    if model_row(ctx.book, scenario.model).get("preprocess") not in ("image", "audio"):
        return ()  # nothing to preprocess: the device changes nothing
    out = []
    for device in (PreprocessDevice.CPU, PreprocessDevice.DPU, PreprocessDevice.GPU, PreprocessDevice.NONE):
        sc = scenario if device == scenario.preprocessing.device else variant(
            scenario, ctx.book, {"preprocessing.device": device.value})
        design = build_design(sc, ctx)
        priced = priced_throughput(design)[0]
        rate = priced.throughput_rps
        r = tco(cost_inputs(design, ctx, rate))
        out.append(DeviceCost(device=device.value, throughput_rps=rate, tco_usd=r.tco_usd,
                              wall_power_w=r.wall_power_w, queries_per_usd=_valued(r.queries_per_usd, priced),
                              queries_per_joule=_valued(r.queries_per_joule, priced)))
    return tuple(out)


def cost_study(scenario: Scenario, ctx: Context, kwh_top: Optional[float] = None) -> CostStudy:
    """The design's cost at the throughput it sustains, over the years, and its sensitivities."""
    require_gpu(scenario)
    design = build_design(scenario, ctx)
    priced, cap, sla = priced_throughput(design)
    rate, has_value = priced.throughput_rps, priced.no_value_reason is None
    inputs = cost_inputs(design, ctx, rate)
    result = tco(inputs)
    known = tariffs(ctx.prices_power, inputs, has_value)
    top = kwh_top or KWH_SPAN * max([inputs.usd_per_kwh] + [t.usd_per_kwh for t in known])
    notes = (f"{inputs.servers} server(s), {inputs.gpus} GPU(s), {inputs.dpus} DPU card(s), {inputs.nics} NIC(s); "
             f"{HOURS_PER_YEAR:g} hours a year",) + result.notes
    return CostStudy(throughput_rps=rate, basis=priced.basis, no_value_reason=priced.no_value_reason,
                    queries_per_usd=_valued(result.queries_per_usd, priced),
                    queries_per_joule=_valued(result.queries_per_joule, priced), capacity_rps=cap, sla_bounded_rps=sla,
                    priced_utilization=rate / cap if cap > 0 else 0.0, inputs=inputs,
                    result=result, defaults=cost_defaults(scenario, ctx), years=tco_over_years(inputs, result),
                    kwh=kwh_sensitivity(inputs, top, has_value=has_value),
                    utilization=utilization_sensitivity(design, ctx, sla),
                    tariffs=known, devices=_device_costs(scenario, ctx), notes=notes)
