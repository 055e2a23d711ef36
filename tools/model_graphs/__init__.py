"""Curation-time graph builder for the estimator's per-operator cost tables (data/seed/model_costs.csv).

Pure Python: each model is rebuilt layer by layer from its published definition (torchvision, NeMo, the papers),
tracking tensor shapes, and every operator becomes one `engine.seed.cost_records.OpCostRow`. Regenerate with
`python -m tools.model_graphs` from the repository root.
"""
