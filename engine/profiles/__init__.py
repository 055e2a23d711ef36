"""Service-time model: interpolation, slice law, knees (DESIGN.md section 5)."""

from engine.profiles.curves import Curve, CurveKey
from engine.profiles.interp import OutOfRange
from engine.vocab import KneeRule
from engine.profiles.answers import Knee, Prediction
from engine.profiles.points import ProfileError
from engine.profiles.service import ProfileBook
from engine.profiles.slicelaw import SliceFit, fit_slice_law, slice_latency

__all__ = ["Curve", "CurveKey", "Knee", "KneeRule", "OutOfRange", "Prediction", "ProfileBook", "ProfileError",
           "SliceFit", "fit_slice_law", "slice_latency"]
