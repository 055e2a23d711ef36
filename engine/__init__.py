"""Kneepoint's engine: hardware catalogue, profile store, analytic engine and simulator (no UI).

One BLAS thread unless the user chose otherwise. The engine's linear algebra is many small dense solves (the
batching chains' stationary laws, a few hundred states each), where OpenBLAS's worker threads only contend
with each other and with the app's sessions or a search's workers: with the default threads on this 2-core
machine under load, one 199-state solve took 133 ms; with one thread, 1 ms (the default scenario's
evaluation fell from 18.3 s to 7.7 s). OpenBLAS reads the setting once, when numpy first loads, so it is set
here, before any engine module imports numpy; app.py imports the engine before anything that loads numpy.

Freed memory stays with the process (glibc's malloc, unless the user tuned it with MALLOC_*_ or GLIBC_TUNABLES):
the analytic engine's arrays are short-lived temporaries of 0.1-2 MB (a timer chain's rows, a rate scan's
columns), and glibc's defaults hand the top of the heap back to the kernel whenever 128 KiB of it are free, then
fault the pages in again at the next array: a search of 1,912 designs took ~36,000 page faults and 0.07-0.16 s of
system time (7-11 % of its CPU), a timer chain half of its time. keep_freed_memory sets the thresholds glibc's own
dynamic rule converges to (mmap from 32 MiB, trim beyond 64 MiB free) from the start: the same search then takes
~5 page faults. It changes where memory comes from, not what is computed.
"""

import ctypes
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: its dynamic threshold's ceiling
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # as glibc's dynamic rule pairs them


def keep_freed_memory() -> bool:
    """Set glibc's trim and mmap thresholds (the module's docstring says why); False where the C library has no
    mallopt (not glibc) or the user set malloc's tunables in the environment, which are then left as they are."""
    if any(k.startswith("MALLOC_") and k.endswith("_") for k in os.environ) or "malloc" in os.environ.get(
            "GLIBC_TUNABLES", ""):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # no C library to open, or one without mallopt
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


keep_freed_memory()
