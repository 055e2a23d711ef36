"""The engine values the CLI parser shows or checks (choices, limits, defaults), copied here because their home
modules pull in pydantic, numpy, scipy, pandas or DuckDB, and building the parser (all `--help` does) must stay
cheap (issue 19). tests/test_cli_imports.py checks each copy against its source."""

#: engine.io.exporters.FORMATS
EXPORT_FORMATS = ("csv", "parquet")
#: engine.seed.records.PRECISIONS
PRECISIONS = ("fp32", "tf32", "fp16", "amp", "int8", "bf16")
#: the keys of engine.seed.records.TABLES
TABLE_NAMES = ("gpus", "mig_profiles", "mig_placements", "models", "latency_points", "load_points",
               "preprocessing_points", "rpc_figures", "prices_power", "model_costs", "gpu_specs")
#: engine.store.USER_TABLES
USER_TABLES = ("latency_points", "load_points", "preprocessing_points")

#: engine.executors.EXECUTOR_NAMES
EXECUTOR_NAMES = ("local", "ray")

#: engine.sim.workload.MAX_REQUESTS
MAX_REQUESTS = 20_000_000
#: the values of engine.scenario.WorkloadKind
WORKLOAD_KINDS = ("poisson", "mlperf-server", "offline", "single-stream", "multi-stream", "diurnal", "trace")

#: engine.partition.pack.MAX_GPUS
PARTITION_MAX_GPUS = 64
#: the values of engine.partition.plan.PartitionPolicy
PARTITION_POLICIES = ("gpu1", "gpu2", "gpu3", "gpu4", "gpu7", "gpu-max", "random", "paris")

#: engine.tenancy.gpu_share
KNEE_GAIN_THRESHOLD = 0.10
DEFAULT_STEP_PCT = 5
MAX_OVERSUBSCRIBED_INSTANCES = 500
#: engine.tenancy.reconfig
RESTART_LOAD_S = 3.0
STANDBY_SWITCH_S = 200e-6

#: the keys of engine.seed.papers.PAPERS
REPRODUCE_PAPERS = ("preba", "paris-elsa", "gpu-primitives", "eif", "splitrpc")
