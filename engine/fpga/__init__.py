"""FPGA inference-as-a-service backend (EIF seed): tenancy, temporal-multiplexing slowdown, cold start.

engine.fpga.model: boards, tenants, slowdown fit, per-request time, the tenancy table; engine.fpga.compute: the
accelerator's batch-1 time from its stated array (MACs / multipliers x clock, the model streaming in);
engine.fpga.coldstart: streaming vs whole-model loading and its table; engine.fpga.backend: hardware
threads as the engine's accelerator side (not imported here: it imports engine.analytic).
"""

from engine.fpga.coldstart import ColdStart, cold_start_table, streaming, whole_model
from engine.fpga.model import (BOARDS, FpgaBoard, FpgaModelError, FpgaService, Tenancy, board, fpga_tenancy_table,
                               service_time, slowdown, tenancy)

__all__ = ["BOARDS", "ColdStart", "FpgaBoard", "FpgaModelError", "FpgaService", "Tenancy", "board",
           "cold_start_table", "fpga_tenancy_table", "service_time", "slowdown", "streaming", "tenancy",
           "whole_model"]
