"""Reproducing the seed papers' headline results with the engine (issue 14).

papers.py reads data/seed/paper_results.csv (the published numbers); entry.py is one reproduction (how the
engine computes it, what its parameters were fitted on, in/out of sample); one module per paper lists its
entries (preba, paris_elsa, gpu_primitives, eif, splitrpc) and its Compare-page presets, built from the same
scenario functions (preset.py: the model); registry.py gathers both; runner.py runs the entries into rows and a
summary. `python -m engine reproduce` prints the table.
"""
