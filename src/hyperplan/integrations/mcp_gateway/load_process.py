"""The gateway process of ``hyperplan bench gateway-load`` (:mod:`.load`): started on a
free port with the run's settings, its RSS and CPU read from ``/proc`` (Linux; None
elsewhere), stopped by its PID; and which checkout of hyperplan it runs."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hyperplan.integrations.mcp_gateway.load import LoadConfig


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` (IPv4 or IPv6) that nothing listens on now."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def rss_mb(pid: int) -> float | None:
    """``VmRSS`` of ``pid`` in MB (``/proc/PID/status``), None if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (``/proc/PID/task/*/children``), depth first."""
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            kids = [int(k) for k in children.read_text().split()]
        except (OSError, ValueError):
            continue
        for kid in kids:
            found += [kid, *descendants(kid)]
    return found


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far (``/proc/PID/stat``), None if unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Gateway:
    """``hyperplan serve --http PORT ...`` as a subprocess, stopped by its PID."""

    def __init__(self, config: LoadConfig, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.command = [config.python, "-m", "hyperplan", "serve", "--http", str(self.port),
                        "--mode", config.mode, "--embedder", config.embedder,
                        *config.serve_args, *config.sources]
        self.env = gateway_env(config, workdir)
        self.cwd = config.cwd
        self.log = workdir / "gateway-stderr.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None, "the gateway was not started"
        return self.process.pid

    def start(self) -> None:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(self.command, env=self.env, cwd=self.cwd,
                                            stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=log)

    def stderr_tail(self, chars: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    async def wait_listening(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"the gateway exited: {self.stderr_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the gateway did not listen within {timeout:g} s: "
                                       f"{self.stderr_tail()}") from None
                await asyncio.sleep(0.1)

    def memory(self) -> dict[str, float | None]:
        """RSS of the gateway process and the sum over its descendants (MB)."""
        kids = [rss_mb(k) for k in descendants(self.pid)]
        return {"gateway": rss_mb(self.pid),
                "children": round(sum(k for k in kids if k is not None), 1)}

    def stop(self) -> None:
        """SIGTERM to the gateway's PID, SIGKILL after 20 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)


def gateway_env(config: LoadConfig, workdir: Path) -> dict[str, str]:
    """The environment of the gateway: this one, a cache directory, ``PYTHONPATH``."""
    env = {**os.environ, "HYPERPLAN_CACHE_DIR": config.cache_dir or str(workdir / "cache")}
    if config.pythonpath is not None:
        env["PYTHONPATH"] = config.pythonpath
    return env


def checkout_of(config: LoadConfig) -> dict[str, str]:
    """Which ``hyperplan`` the gateway imports (module path) and, in a git checkout, its
    commit: what before/after runs compare."""
    env = gateway_env(config, Path(tempfile.gettempdir()))
    probe = subprocess.run([config.python, "-c", "import hyperplan; print(hyperplan.__file__)"],
                           env=env, cwd=config.cwd, capture_output=True, text=True, timeout=60)
    module = probe.stdout.strip()
    info = {"module": module}
    if module:
        git = subprocess.run(["git", "-C", str(Path(module).parent), "rev-parse", "HEAD"],
                             capture_output=True, text=True, timeout=30)
        if git.returncode == 0:
            info["commit"] = git.stdout.strip()
    return info
