"""Reproducing the seed papers' headline results with the engine (issue 14).

papers.py reads data/seed/paper_results.csv (the published numbers); entry.py is one reproduction (how the
engine computes it, what its parameters were fitted on, in/out of sample); one module per paper lists its
entries (preba, paris_elsa, gpu_primitives, eif, splitrpc); registry.py gathers them; runner.py runs them
into rows and a summary. `python -m engine reproduce` prints the table.
"""
