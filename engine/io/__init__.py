"""Files in and out: imports (own CSV/Parquet schema, Triton formats), exports, traces, URL tokens, user files."""
