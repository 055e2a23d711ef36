"""Where parallel work runs: `local` (this machine's cores, the default; no Ray import) or `ray` (a Ray cluster).

    make_executor("local", workers=2)
    make_executor("ray", address="10.0.0.5:6379")   # a running cluster's head; "auto": the one on this machine;
                                                     # None: start a Ray on this machine
See engine.executors.base for the protocol every executor follows.
"""

from __future__ import annotations

import importlib.util
from typing import Optional

from engine.executors.base import EXECUTOR_NAMES, Executor, ExecutorError
from engine.executors.local import LocalExecutor

__all__ = ["EXECUTOR_NAMES", "Executor", "ExecutorError", "LocalExecutor", "executor_from_args", "make_executor",
           "ray_installed"]


def ray_installed() -> bool:
    """Whether Ray can be imported here, found without importing it (a page load must not pay for Ray)."""
    return importlib.util.find_spec("ray") is not None


def make_executor(name: str = "local", *, workers: Optional[int] = None, address: Optional[str] = None) -> Executor:
    """The executor called `name`; ExecutorError when it is unknown or Ray is not installed."""
    if name == "local":
        return LocalExecutor(workers)
    if name == "ray":
        if not ray_installed():
            raise ExecutorError("the ray executor needs Ray: pip install -r requirements-ray.txt")
        from engine.executors.ray_executor import RayExecutor

        return RayExecutor(address)
    raise ExecutorError(f"executor: {name!r} is not one of {', '.join(EXECUTOR_NAMES)}")


def executor_from_args(args, workers: Optional[int] = None) -> Executor:
    """The executor that --executor and --ray-address (engine.cli.evaluate.add_executor_arguments) ask for."""
    if args.ray_address and args.executor != "ray":
        raise ExecutorError("--ray-address: only with --executor ray")
    return make_executor(args.executor, workers=workers, address=args.ray_address)
