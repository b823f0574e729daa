"""The per-user dispatcher on its own: one app per principal, built once, the least recently used
idle one closed when more users than allowed are live, and no request without a principal."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from deskmcp.core.principal import Principal, acting_for
from deskmcp.serving.users import UserDispatcher
from tests.helpers.principals import principal


class Recorder:
    """Builds a tiny app per principal that answers with the principal's key, and records
    which users were built and which were closed."""

    def __init__(self) -> None:
        self.built: list[str] = []
        self.closed: list[str] = []
        self.one_closed = anyio.Event()

    def __call__(self, who: Principal) -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[Any]]]:
        self.built.append(who.key)

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": who.key.encode()})

        @asynccontextmanager
        async def lifespan() -> AsyncIterator[None]:
            try:
                yield
            finally:
                self.closed.append(who.key)
                self.one_closed.set()

        return app, lifespan


async def get(dispatcher: UserDispatcher, who: Principal | None) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/tools", "headers": [], "query_string": b""}
    with acting_for(who):
        await dispatcher(scope, receive, send)
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


@pytest.mark.anyio
async def test_each_principal_gets_their_own_app_built_once() -> None:
    recorder = Recorder()
    dispatcher = UserDispatcher(recorder, live=4)
    alice, bob = principal("alice"), principal("bob")
    with anyio.fail_after(30):
        async with dispatcher.run():
            answers = [await get(dispatcher, p) for p in (alice, bob, alice, bob)]

    assert [body for _, body in answers] == [p.key.encode() for p in (alice, bob, alice, bob)]
    assert recorder.built == [alice.key, bob.key]
    assert sorted(recorder.closed) == sorted([alice.key, bob.key])  # closed when the dispatcher stops


@pytest.mark.anyio
async def test_the_least_recently_used_user_is_closed_beyond_the_limit_and_rebuilt_when_back() -> None:
    recorder = Recorder()
    dispatcher = UserDispatcher(recorder, live=1)
    alice, bob = principal("alice"), principal("bob")
    with anyio.fail_after(30):
        async with dispatcher.run():
            await get(dispatcher, alice)
            await get(dispatcher, bob)
            await recorder.one_closed.wait()
            running_after_bob = dispatcher.running
            status, body = await get(dispatcher, alice)

    assert recorder.closed[0] == alice.key
    assert running_after_bob == [bob.key]
    assert (status, body) == (200, alice.key.encode())
    assert recorder.built == [alice.key, bob.key, alice.key]


@pytest.mark.anyio
async def test_security_a_request_without_a_principal_reaches_no_users_app() -> None:
    recorder = Recorder()
    dispatcher = UserDispatcher(recorder, live=2)
    with anyio.fail_after(30):
        async with dispatcher.run():
            status, body = await get(dispatcher, None)

    assert status == 401
    assert b"auth_required" in body
    assert recorder.built == []


class Streaming(Recorder):
    """A Recorder whose apps answer `GET /mcp` with a stream that lasts until that user's servers
    close, as an MCP client's standing event stream does."""

    def __init__(self) -> None:
        super().__init__()
        self.streams_ended: list[str] = []

    def __call__(self, who: Principal) -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[Any]]]:
        _app, lifespan = super().__call__(who)
        closing = anyio.Event()

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"event: open\n\n", "more_body": True})
            await closing.wait()
            self.streams_ended.append(who.key)
            await send({"type": "http.response.body", "body": b""})

        @asynccontextmanager
        async def closes_streams() -> AsyncIterator[None]:
            async with lifespan():
                try:
                    yield
                finally:
                    closing.set()

        return app, closes_streams


async def stream(dispatcher: UserDispatcher, who: Principal, opened: anyio.Event) -> None:
    async def receive() -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError

    async def send(message: Any) -> None:
        if message.get("more_body"):
            opened.set()

    scope = {"type": "http", "method": "GET", "path": "/mcp", "headers": [], "query_string": b""}
    with acting_for(who):
        await dispatcher(scope, receive, send)


@pytest.mark.anyio
async def test_users_holding_only_event_streams_count_against_the_live_limit() -> None:
    streaming = Streaming()
    dispatcher = UserDispatcher(streaming, live=2)
    people = [principal(name) for name in ("alice", "bob", "carol", "dave", "erin")]
    with anyio.fail_after(30):
        async with dispatcher.run(), anyio.create_task_group() as tasks:
            for who in people:
                opened = anyio.Event()
                tasks.start_soon(stream, dispatcher, who, opened)
                await opened.wait()
            while len(streaming.streams_ended) < 3:
                await anyio.wait_all_tasks_blocked()
            running = dispatcher.running
            tasks.cancel_scope.cancel()  # the two live users' streams stay open until their clients leave

    assert running == [people[3].key, people[4].key]
    assert streaming.streams_ended[:3] == [p.key for p in people[:3]]


@pytest.mark.anyio
async def test_other_users_are_answered_while_a_new_users_servers_are_being_built() -> None:
    recorder = Recorder()
    alice, carol = principal("alice"), principal("carol")
    building, answered = threading.Event(), threading.Event()
    heard: list[bool] = []

    def slow(who: Principal) -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[Any]]]:
        if who == carol:  # building takes a while; meanwhile alice asks
            building.set()
            heard.append(answered.wait(timeout=10))
        return recorder(who)

    dispatcher = UserDispatcher(slow, live=4)
    with anyio.fail_after(60):
        async with dispatcher.run():
            await get(dispatcher, alice)
            async with anyio.create_task_group() as tg:
                carols: list[tuple[int, bytes]] = []

                async def ask_as_carol() -> None:
                    carols.append(await get(dispatcher, carol))

                tg.start_soon(ask_as_carol)
                await anyio.to_thread.run_sync(building.wait, 10)
                alices = await get(dispatcher, alice)
                answered.set()

    assert heard == [True]  # alice was answered while carol's servers were being built
    assert alices == (200, alice.key.encode())
    assert carols == [(200, carol.key.encode())]
