"""The scenario contract's building blocks: limits declared once, the positive float, the frozen base of every
part, and the error a validator raises to name a nested field path (engine.scenario assembles the parts)."""

from typing import Annotated, Optional

from pydantic import AfterValidator, BaseModel, ConfigDict

# Limits, declared once. Every float in the contract is finite (NaN and Infinity, which JSON parsers accept, are
# refused) and bounded, so that nothing absurd reaches round(), math.exp or a queueing formula downstream.
#: longest time in milliseconds (SLA, queue delay, per-item or per-request costs): an hour, beyond any serving path
MAX_MS = 3_600_000.0
#: largest price of one item (server, GPU, card, NIC) in USD: a billion, far above any real part
MAX_USD = 1e9
#: longest period or interval in seconds (diurnal cycle, noise interval): a year
MAX_SECONDS = 31_536_000.0
#: largest |location| of a log-normal in log units: exp(20) is 4.9e8 items or seconds, beyond any query or input
MAX_LOG_LOCATION = 20.0
#: largest scale (sigma) of a log-normal: exp(20 + 5 x 6) stays finite even at six standard deviations
MAX_LOG_SCALE = 5.0
#: largest ELSA weight (alpha, beta): they scale one latency estimate against another, 1000x is already extreme
MAX_WEIGHT = 1000.0
#: largest input length (audio seconds or tokens) and largest image size in megapixels
MAX_INPUT_LENGTH = 1e6
MAX_MEGAPIXELS = 1000.0
#: largest electricity price in USD per kWh: a hundred times any grid tariff
MAX_USD_PER_KWH = 100.0
#: largest number in rpc.components (us, ns, bytes, Gbps): no RPC path cost comes near a billion of its unit
MAX_COMPONENT_VALUE = 1e9
#: most arrival timestamps a scenario carries inline: it travels in links (zlib-compressed), pages' state and
#: saved scenarios, so a trace is a sample of traffic, not a day of it (the default upload row limit is the same)
MAX_TRACE_TIMESTAMPS = 50_000
#: latest timestamp (in trace_unit): Unix-epoch microseconds (about 1.8e15 today) fit, float64 still resolves 0.5
MAX_TIMESTAMP = 4e15
#: highest arrival rate in requests/s (the contract's rate, sweeps, simulated loads): ten million
MAX_RATE_RPS = 1e7
#: most GPU% shares on one GPU: CUDA MPS serves a few dozen clients per GPU, 64 leaves room
MAX_SHARES = 64
#: most entries in a list the contract sizes per partition or per query size (service.mean_ms, query-size table)
MAX_LIST_ITEMS = 4096
#: most FPGA boards, accelerators per board and threads per accelerator: far above EIF's 8 x 6 per board
MAX_FPGA_BOARDS, MAX_FPGA_UNITS = 64, 1024
#: most CPU cores on one host (host.cpu_cores and every core count)
MAX_CORES = 1024
NAME_MAX = 120  # characters in a scenario's name
#: smallest value of a positive number (times, rates, sizes, weights): below it reciprocals and products overflow
#: or vanish (1 / 1e-300 ms is no rate at all) and a diurnal or polling interval would cut a run into billions
MIN_POSITIVE = 1e-9
#: least probability a log-normal query-size distribution must put on 1..max_size items: with less there is
#: nothing left to renormalise and every downstream mean is NaN
MIN_LOGNORMAL_MASS = 1e-9


def _not_vanishing(value: float) -> float:
    if 0 < value < MIN_POSITIVE:  # zero and below are the field's own gt=0 to name
        raise ValueError(f"must be at least {MIN_POSITIVE:g}: smaller values vanish in the model's arithmetic")
    return value


#: the contract's positive float: finite (as every float here), > 0 (a field's own gt=0 says so first), and at least
#: MIN_POSITIVE, so that no time, rate or size is a denormal whose reciprocal overflows
Positive = Annotated[float, AfterValidator(_not_vanishing)]


class Spec(BaseModel):
    """Every part of the contract: frozen, no unknown fields, no NaN or infinity."""

    # allow_inf_nan=False: NaN and +-Infinity are refused in every float field of every part (lists included)
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class PathError(ValueError):
    """Raised inside validators to report a nested field path."""

    def __init__(self, path: str, value, message: str, prefix: Optional[str] = None):
        self.path, self.value = path, value
        text = f"{prefix}; {message}" if prefix else message
        super().__init__(text)
