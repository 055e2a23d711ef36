"""Sharing one non-MIG GPU by GPU% (GPU runtime primitives seed): knee GPU%, Multi-Model, Param-Share,
oversubscription and reconfiguration with a standby instance (DESIGN.md section 5, Partitioning)."""

from engine.tenancy.errors import TenancyError
from engine.tenancy.gpu_share import (KNEE_GAIN_THRESHOLD, GpuShareCurve, GpuSharePoint, KneeGpuPct, Oversubscription,
                                      OversubscriptionSweep, Tenant, knee_gpu_pct, latency_vs_gpu_pct, oversubscribe,
                                      oversubscription_sweep, share_grid)
from engine.tenancy.multimodel import MultiModelOption, MultiModelPlan, multi_model, plan_multimodel
from engine.tenancy.paramshare import (ParamShareFit, instances_with_sharing, instances_without_sharing,
                                       param_share_fit, standby_extra_mb)
from engine.tenancy.reconfig import RESTART_LOAD_S, STANDBY_SWITCH_S, Reconfiguration, reconfiguration

__all__ = ["KNEE_GAIN_THRESHOLD", "RESTART_LOAD_S", "STANDBY_SWITCH_S", "GpuShareCurve", "GpuSharePoint", "KneeGpuPct",
           "MultiModelOption", "MultiModelPlan", "Oversubscription", "OversubscriptionSweep",
           "ParamShareFit", "Reconfiguration", "TenancyError", "Tenant",
           "instances_with_sharing", "instances_without_sharing", "knee_gpu_pct", "latency_vs_gpu_pct",
           "multi_model", "oversubscribe", "oversubscription_sweep", "param_share_fit",
           "plan_multimodel", "reconfiguration", "share_grid", "standby_extra_mb"]
