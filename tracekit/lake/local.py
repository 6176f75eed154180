"""A local Spark Connect server, for trying the Spark engine on one machine (and for the tests).

The pyspark wheel (4.0 and later) carries Spark's jars, the Spark Connect
server's among them, and its ``spark-submit``; with a Java 17 runtime that is
all a local server needs (``docs/scale-out.md``). It listens on loopback only.

    python -m tracekit.lake.local --port 15002

From Python, ``with LocalSpark() as spark:`` starts one on a free port (its
address is ``spark.remote``) and stops it at the end of the block.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Final

from tracekit._util.extras import install_line
from tracekit.errors import LakeError

__all__ = ["LocalSpark", "free_port"]

_SERVER: Final = "org.apache.spark.sql.connect.service.SparkConnectServer"


def free_port() -> int:
    """A TCP port free on loopback now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _spark_home() -> Path:
    try:
        import pyspark
    except ImportError:
        raise LakeError(
            "a local Spark server needs pyspark", hint=install_line("spark")
        ) from None
    return Path(pyspark.__file__).parent


class LocalSpark:
    """A Spark Connect server in a child process, on ``127.0.0.1:port``.

    Args:
        port: the port (a free one by default).
        memory: the driver's heap (``1g``; Spark runs in the driver, ``local[cores]``).
        cores: worker threads.
        shuffle_partitions: Spark's default of 200 is for clusters; a small
            machine answers small queries faster with a few.
        log: where the server's output goes (a temporary file by default).
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        memory: str = "1g",
        cores: int = 2,
        shuffle_partitions: int = 4,
        log: Path | None = None,
    ) -> None:
        self.port = port or free_port()
        self.remote = f"sc://127.0.0.1:{self.port}"
        self.memory, self.cores, self.shuffle = memory, cores, shuffle_partitions
        self.log = log or Path(tempfile.mkstemp(prefix="tracekit-spark-", suffix=".log")[1])
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        """The ``spark-submit`` command line that starts the server."""
        home = _spark_home()
        confs = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.sql.shuffle.partitions": str(self.shuffle),
            "spark.sql.session.timeZone": "UTC",
            "spark.ui.enabled": "false",
        }
        argv = [str(home / "bin" / "spark-submit"), "--class", _SERVER]
        argv += ["--master", f"local[{self.cores}]", "--driver-memory", self.memory]
        for key, value in confs.items():
            argv += ["--conf", f"{key}={value}"]
        return [*argv, "spark-internal"]

    def start(self, timeout: float = 300.0) -> LocalSpark:
        """Start the server and wait until it takes connections.

        Raises:
            LakeError: no Java, or the server did not come up within ``timeout`` seconds.
        """
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise LakeError(
                "a local Spark server needs a Java 17 runtime",
                hint="apt-get install openjdk-17-jre-headless (or run .ci/java.sh)",
            )
        env = {**os.environ, "SPARK_HOME": str(_spark_home()), "SPARK_LOCAL_IP": "127.0.0.1"}
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        out: IO[bytes] = open(self.log, "wb")  # noqa: SIM115 - the child keeps writing to it
        self.process = subprocess.Popen(
            self.command(), stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LakeError(f"the Spark server stopped at once: {self._tail()}")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.5)
        self.stop()
        raise LakeError(f"the Spark server did not start in {timeout:.0f} s: {self._tail()}")

    def _tail(self) -> str:
        try:
            return " | ".join(self.log.read_text(errors="replace").splitlines()[-5:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Stop the server (its whole process group: spark-submit starts a JVM)."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> LocalSpark:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """Run a local server until interrupted: ``python -m tracekit.lake.local --port 15002``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=15002)
    parser.add_argument("--memory", default="2g")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    server = LocalSpark(args.port, memory=args.memory, cores=args.cores)
    server.start()
    print(f"Spark Connect at {server.remote} (log: {server.log}); Ctrl-C stops it", flush=True)
    try:
        assert server.process is not None
        server.process.wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
