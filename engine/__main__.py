"""`python -m engine COMMAND`: run one command (engine.cli.main), then exit without a last scan of every object.

The interpreter's exit begins with a full collection of the cyclic garbage collector over every object the
command left: after an `evaluate` about a million (the engine's modules, its pydantic schemas, the profile book),
~0.04 s of a ~0.3 s run, to free memory the process is about to give back whole. Objects frozen by gc.freeze are
not scanned (benchmarks/cli_startup.py; ~0.01 s of exit remains, the modules' teardown). Everything else about the
exit is unchanged: atexit handlers run (Ray's shutdown, multiprocessing's pools), the modules are torn down and
standard output is flushed; only garbage held in reference cycles is not collected, and the commands close their
files and stores explicitly rather than leaving that to the collector. A process that loaded DuckDB exits as
before: its bindings (nanobind) report the instances left uncollected at exit as leaks, on standard error.
In-process callers of engine.cli.main.main are not affected: only this entry point freezes.
"""

import gc
import sys

from engine.cli.main import main

code = main()
if "duckdb" not in sys.modules:
    gc.freeze()
raise SystemExit(code)
