"""Where renders and validations wait and run: a few threads of their own and a bounded queue.

Sync tools run in the event loop's shared thread pool (40 threads for every server of the
process). A render blocks its thread for as long as mermaid.js takes, so a burst of renders
would take every thread and leave the other tools (of every server in `serve all`) waiting.
Here the waiting happens in the event loop, not in a thread, only `workers` threads ever
render, and a call past the queue limit is refused at once with `rate_limited`.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from deskmcp.core.errors import RateLimited

T = TypeVar("T")


class RenderQueue:
    """Runs heavy calls on `workers` threads of its own, `queue_limit` more waiting at most."""

    def __init__(self, workers: int, queue_limit: int) -> None:
        self.workers = workers
        self.queue_limit = queue_limit
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="deskmcp-render")
        self._lock = threading.Lock()
        self._admitted = 0
        """Calls running or waiting; one leaves when its work is done (not when its caller gives up)."""

    @property
    def admitted(self) -> int:
        return self._admitted

    def _admit(self) -> None:
        with self._lock:
            if self._admitted >= self.workers + self.queue_limit:
                raise RateLimited(
                    f"{self._admitted} renders or validations are already running or waiting (the most "
                    f"DIAGRAMS_RENDER_QUEUE={self.queue_limit} allows). Try again once one has answered.",
                    {"running_or_queued": self._admitted, "queue_limit": self.queue_limit},
                )
            self._admitted += 1

    def _leave(self, _future: Future[Any]) -> None:
        with self._lock:
            self._admitted -= 1

    async def run(self, fn: Callable[[], T]) -> T:
        """`fn()` on one of the queue's threads; its exceptions are raised here."""
        self._admit()
        try:
            future = self._executor.submit(fn)
        except RuntimeError:  # shut down
            with self._lock:
                self._admitted -= 1
            raise
        future.add_done_callback(self._leave)
        done = anyio.Event()
        token = anyio.lowlevel.current_token()
        loop_thread = threading.get_ident()

        def wake(_future: Future[T]) -> None:
            # an already finished future calls back at once, in the event loop's own thread
            if threading.get_ident() == loop_thread:
                done.set()
                return
            with contextlib.suppress(RuntimeError):  # the event loop has ended: nobody waits any more
                anyio.from_thread.run_sync(done.set, token=token)

        future.add_done_callback(wake)
        try:
            await done.wait()
        except BaseException:
            future.cancel()  # a caller that gives up takes its waiting work out of the queue
            raise
        return future.result()

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
