"""Command line: `python -m engine ...` (main.py parses; one module per command group)."""
