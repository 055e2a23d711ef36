"""Kneepoint's engine: hardware catalogue, profile store, analytic engine and simulator (no UI).

One BLAS thread unless the user chose otherwise. The engine's linear algebra is many small dense solves (the
batching chains' stationary laws, a few hundred states each), where OpenBLAS's worker threads only contend
with each other and with the app's sessions or a search's workers: with the default threads on this 2-core
machine under load, one 199-state solve took 133 ms; with one thread, 1 ms (the default scenario's
evaluation fell from 18.3 s to 7.7 s). OpenBLAS reads the setting once, when numpy first loads, so it is set
here, before any engine module imports numpy; app.py imports the engine before anything that loads numpy.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
