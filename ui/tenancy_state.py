"""Cached engine calls for the Tenancy page (keyed by its inputs and the data version)."""

from __future__ import annotations

import streamlit as st

from engine.studies.tenancy_backends import backend_view
from engine.tenancy.mig import mig_tenancy
from engine.studies.tenancy import tenancy_overview
from ui.session import get_book, get_store


@st.cache_data(max_entries=64, show_spinner=False)
def _mig(model: str, sku: str, batch: int, version: tuple):
    return mig_tenancy(get_book(), model, sku, batch)


def mig_cached(model: str, sku: str, batch: int):
    return _mig(model, sku, batch, get_store().version())


@st.cache_data(max_entries=64, show_spinner=False)
def _overview(model: str, sku: str, deadline_ms: float, batch: int, rate_rps: float, buffer_mb, share_weights: bool,
              mig_profile, version: tuple):
    return tenancy_overview(get_book(), model, sku, deadline_ms, batch=batch, rate_rps=rate_rps, buffer_mb=buffer_mb,
                            share_weights=share_weights, mig_profile=mig_profile)


def overview_cached(model: str, sku: str, deadline_ms: float, batch: int, rate_rps: float, buffer_mb,
                    share_weights: bool, mig_profile=None):
    return _overview(model, sku, deadline_ms, batch, rate_rps, buffer_mb, share_weights, mig_profile,
                     get_store().version())


@st.cache_data(max_entries=64, show_spinner=False)
def _backends(model: str, sku: str, fpga_ms, cpu_ms, sparsity: float, version: tuple):
    return backend_view(get_book(), model, sku, fpga_ms, cpu_ms, sparsity)


def backends_cached(model: str, sku: str, fpga_ms, cpu_ms, sparsity: float):
    return _backends(model, sku, fpga_ms, cpu_ms, sparsity, get_store().version())
