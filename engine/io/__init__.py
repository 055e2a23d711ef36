"""Files in and out: seed and import CSVs, Triton formats, exports, traces, URL tokens, user files."""
