"""Ray nodes on this machine's loopback: `python -m engine.executors.ray_node start --head --port P --block` takes
`ray start`'s arguments, and LocalRayCluster starts a head and worker nodes for tests and benchmarks.

Ray turns 127.0.0.1 into the machine's routable address, so that other machines can join; `ray start` on loopback
therefore listens and registers on the network interface. A throwaway cluster on one machine has no other machines
to serve: these nodes keep every address on loopback (Ray's ENABLE_RAY_CLUSTER switch, which also forbids worker
nodes, is turned off for address resolution only). Imports Ray: never imported by the app.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Optional

#: seconds to wait for a node to join (starting one takes ~5-15 s on a busy 2-core machine)
START_TIMEOUT_S = 120.0
#: a node's object store, in bytes: the shared data of a map is ~0.2 MB, results are small
OBJECT_STORE_BYTES = 200_000_000


def main(argv: list[str]) -> int:
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # the node's own processes resolve to loopback too
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # loopback only: no token (a ~/.ray/auth_token left by some local ray.init would otherwise turn it on for the
    # nodes but not for drivers joining by address, which then cannot connect)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray._private.ray_constants as ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False
    import ray.scripts.scripts as scripts

    # `ray start --address` refuses to start a worker node when ENABLE_RAY_CLUSTER is off: let that check see it on
    allowed = types.ModuleType("ray_constants_for_scripts")
    allowed.__dict__.update(ray_constants.__dict__)
    allowed.ENABLE_RAY_CLUSTER = True
    scripts.ray_constants = allowed
    sys.argv = ["ray", *argv]
    return scripts.main()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalRayCluster:
    """A head (no CPUs unless head_cpus) and `workers` nodes of `cpus_per_node` CPUs, on loopback, each a
    `ray start --block` process this object started and stops (by its id)."""

    def __init__(self, workers: int = 1, cpus_per_node: int = 1, head_cpus: int = 0, log_dir: Optional[Path] = None):
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.cpus_per_node, self.head_cpus = cpus_per_node, head_cpus
        # Ray's sockets live under it and a Unix socket path has at most 107 bytes: by default a short new directory
        self._own_dir = log_dir is None
        self.log_dir = Path(tempfile.mkdtemp(prefix="kp-ray-")) if log_dir is None else Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.head: Optional[subprocess.Popen] = None
        self.nodes: list[subprocess.Popen] = []
        self._initial_workers = workers

    def _start(self, args: list[str], log: str) -> subprocess.Popen:
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=os.pathsep.join(
            [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]))
        return subprocess.Popen([sys.executable, "-m", "engine.executors.ray_node", "start", *args, "--block",
                                 "--disable-usage-stats", f"--object-store-memory={OBJECT_STORE_BYTES}"],
                                env=env, stdout=open(self.log_dir / log, "wb"), stderr=subprocess.STDOUT,
                                start_new_session=True)

    def start(self) -> "LocalRayCluster":
        self.head = self._start(["--head", f"--port={self.port}", f"--num-cpus={self.head_cpus}",
                                 "--include-dashboard=false", f"--temp-dir={self.log_dir / 'ray'}"], "head.log")
        self._wait_port()
        for _ in range(self._initial_workers):
            self.add_node()
        return self

    def add_node(self) -> subprocess.Popen:
        node = self._start([f"--address={self.address}", f"--num-cpus={self.cpus_per_node}"],
                           f"node{len(self.nodes)}.log")
        self.nodes.append(node)
        return node

    def _wait_port(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self.head.poll() is not None:
                raise RuntimeError(f"the Ray head exited ({self.head.returncode}); see {self.log_dir / 'head.log'}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the Ray head did not listen within {START_TIMEOUT_S:g} s") from None
                time.sleep(0.2)

    def wait_for_cpus(self, cpus: float) -> None:
        """Block (on the cluster's state, with a deadline) until it offers `cpus` CPUs; needs ray.init done."""
        import ray

        deadline = time.monotonic() + START_TIMEOUT_S
        while ray.cluster_resources().get("CPU", 0) < cpus:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the cluster did not reach {cpus:g} CPUs within {START_TIMEOUT_S:g} s")
            time.sleep(0.2)

    def stop_node(self, node: subprocess.Popen) -> None:
        _stop(node)
        self.nodes.remove(node)

    def stop(self) -> None:
        for node in list(self.nodes):
            self.stop_node(node)
        if self.head:
            _stop(self.head)
            self.head = None
        if self._own_dir:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def __enter__(self) -> "LocalRayCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the `ray start --block` process: it stops its node's processes; SIGKILL its group if it hangs."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(10)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
