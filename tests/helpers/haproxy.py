"""Debian's haproxy as the load balancer in front of `deskmcp serve all --http` replicas.

`haproxy_config` is the configuration docs/deployment.md shows (round robin, health checks on the
health route `GET /`, a retry on another replica when one cannot be reached, event streams passed
through unbuffered), with loopback ports; `balancer` runs haproxy in the foreground on it, and
`replica_cluster` starts `deskmcp serve all --stateless` replicas behind it. Each response names
the replica that answered in `X-Served-By`."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.network import free_port
from tests.helpers.processes import environment, write_meeting_cache

SKIP_REASON = "haproxy is not installed (apt-get install haproxy; .ci/run installs it)"


def haproxy_binary() -> str | None:
    return shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if Path(p).is_file()), None
    )


def haproxy_config(
    port: int, replicas: dict[str, int], *, host: str = "127.0.0.1", buffer_requests: bool = False
) -> str:
    """The configuration: a frontend on `host:port`, one backend server per replica name -> port;
    with `buffer_requests`, haproxy reads each request whole before passing it on (`option
    http-buffer-request`, which deployments add to keep slow clients off the replicas)."""
    servers = "\n".join(f"    server {name} 127.0.0.1:{p} check" for name, p in replicas.items())
    buffering = "\n    option http-buffer-request" if buffer_requests else ""
    return f"""global
    maxconn 2000

defaults
    mode http
    timeout connect 5s
    # Event streams stay open while a tool runs: the client and server timeouts bound a silent one.
    timeout client 300s
    timeout server 300s
    timeout http-keep-alive 10s
    # X-Forwarded-For with the client's address (deskmcp believes it from --trusted-proxy addresses).
    option forwardfor{buffering}
    # A replica that cannot be reached: the request goes to another one (it never reached the first).
    # Only then: a replica that died after taking a request may have acted on it (a mail sent
    # without an idempotency key), so a resend could do it twice; the client hears of the failure.
    option redispatch
    retries 2
    retry-on conn-failure

frontend deskmcp
    bind {host}:{port}
    # With TLS here (bind ... ssl crt FILE): http-request set-header X-Forwarded-Proto https
    default_backend replicas

backend replicas
    balance roundrobin
    # The health route answers without a token; a replica that fails two checks gets no requests.
    option httpchk
    http-check send meth GET uri / ver HTTP/1.1 hdr Host 127.0.0.1
    http-check expect status 200
    default-server inter 1s fall 2 rise 1
    http-response set-header X-Served-By %[srv_name]
{servers}
"""


@contextmanager
def balancer(
    config_dir: Path, port: int, replicas: dict[str, int], seconds: float = 30, *, buffer_requests: bool = False
) -> Iterator[str]:
    """haproxy on 127.0.0.1:`port` in front of `replicas` (name -> port); yields its base URL once it listens."""
    binary = haproxy_binary()
    if binary is None:
        raise RuntimeError(SKIP_REASON)
    config = config_dir / "haproxy.cfg"
    config.write_text(haproxy_config(port, replicas, buffer_requests=buffer_requests), encoding="utf-8")
    checked = subprocess.run([binary, "-c", "-f", str(config)], capture_output=True, text=True, check=False)
    if checked.returncode != 0:
        raise RuntimeError(f"haproxy refused its configuration: {checked.stdout}{checked.stderr}")
    proc = subprocess.Popen(
        [binary, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_listening(port, proc, seconds)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def wait_listening(port: int, proc: subprocess.Popen[str], seconds: float) -> None:
    """Return once something accepts connections on 127.0.0.1:`port`; raise if `proc` exits first
    or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"haproxy exited with {proc.returncode}: {err}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            # Bounded poll: haproxy binds within milliseconds of starting.
            time.sleep(0.02)
    raise RuntimeError(f"haproxy did not listen on port {port} within {seconds}s")


class Replica:
    """One `deskmcp ARGS` process, started until its stderr says `ready`; `kill` ends it at once,
    as a crash would."""

    def __init__(self, args: list[str], env: dict[str, str], ready: str = "serving MCP at", seconds: float = 90):
        import queue
        import sys
        import threading

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deskmcp.cli", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.lines: list[str] = []
        arrived: queue.Queue[str | None] = queue.Queue()
        stderr = self.proc.stderr
        assert stderr is not None

        def read() -> None:
            for line in stderr:
                self.lines.append(line)
                arrived.put(line)
            arrived.put(None)  # the process closed stderr: it has ended

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + seconds
        try:
            while not any(ready in line for line in self.lines):
                if arrived.get(timeout=max(0.01, deadline - time.monotonic())) is None:
                    raise queue.Empty
        except queue.Empty:
            self.stop()
            raise RuntimeError(f"deskmcp {' '.join(args)} was not ready: {''.join(self.lines)[-2000:]}") from None
        except BaseException:  # interrupted while it starts (Ctrl-C): no process is left behind
            self.stop()
            raise

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Replicas:
    """haproxy's base URL and the replicas behind it, by name."""

    base: str
    replicas: dict[str, Replica]


@contextmanager
def replica_cluster(
    root: Path,
    servers: str,
    env: Callable[[str], dict[str, str]],
    names: tuple[str, ...] = ("r1", "r2"),
    *,
    buffer_requests: bool = False,
) -> Iterator[Replicas]:
    """`deskmcp serve all --only SERVERS --http --stateless` replicas behind haproxy, trusting it as
    their proxy. Each has a workspace of its own (root/NAME, with a one-meeting Granola cache), as
    on separate hosts, and the environment `env(NAME)` adds (the token, the shared request-state
    keys, the database, the mail server); all are stopped on leaving."""
    if haproxy_binary() is None:
        raise RuntimeError(SKIP_REASON)
    with ExitStack() as stack:
        ports = {name: free_port() for name in names}
        replicas: dict[str, Replica] = {}
        for name, port in ports.items():
            workspace = root / name
            write_meeting_cache(workspace / "granola")
            args = ["serve", "all", "--only", servers, "--http", "--stateless", "--port", str(port)]
            args += ["--trusted-proxy", "127.0.0.1"]
            replicas[name] = Replica(args, environment(workspace, **env(name)))
            stack.callback(replicas[name].stop)
        base = stack.enter_context(balancer(root, free_port(), ports, buffer_requests=buffer_requests))
        yield Replicas(base, replicas)
