"""The two runtimes that carry out plans (:mod:`es_scm.elastic.calls`): sync and asyncio.

Every operation is written once, as a plan; a runtime is the only code that differs between the
sync API and the asyncio one. :class:`SyncRuntime` carries the steps out on an
:class:`~elasticsearch.Elasticsearch` client (concurrent plans on daemon threads, so that Ctrl-C
never waits for a request), :class:`AsyncRuntime` on an
:class:`~elasticsearch.AsyncElasticsearch` client (concurrent plans as tasks, CPU work in a worker
thread). An interruption — ``KeyboardInterrupt``, or the cancellation of an asyncio task — is
thrown into the plan like any error, so that a plan can account for what it did before it lets
the interruption go on.

A refused HEAD call (``indices.exists``...) has no body, hence no reason: both runtimes send the
matching GET then, whose refusal says why (a missing privilege, a client too new for the server).
"""

from __future__ import annotations

import asyncio
import itertools
import operator
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Generator
from concurrent.futures import Future
from threading import Thread
from typing import Any

from elasticsearch import helpers

from es_scm.elastic.calls import Bulk, Call, Compute, Join, Plan, Read, Source, Start, Wait

__all__ = ["AsyncRuntime", "SyncRuntime", "drive", "drive_async"]

_END = object()

# The GET that a HEAD call's method stands for.
_GET_OF_HEAD = {
    "exists": "get",
    "exists_source": "get_source",
    "indices.exists": "indices.get",
    "indices.exists_alias": "indices.get_alias",
    "indices.exists_index_template": "indices.get_index_template",
}


class _Stepper:
    """A plan being carried out: its next step, or its value once it is done."""

    def __init__(self, plan: Generator[Any, Any, Any]) -> None:
        self.plan = plan
        self.done = False
        self.value: Any = None
        self.step: Any = self._advance(lambda: next(plan))

    def resume(self, outcome: tuple[Any, BaseException | None]) -> None:
        """Send the step's answer into the plan, or throw its error in (an interruption too)."""
        answer, error = outcome
        if error is None:
            self.step = self._advance(lambda: self.plan.send(answer))
        else:
            self.step = self._advance(lambda: self.plan.throw(error))

    def _advance(self, move: Callable[[], Any]) -> Any:
        try:
            return move()
        except StopIteration as finished:
            self.done = True
            self.value = finished.value
            return None


def drive(plan: Generator[Any, Any, Any], execute: Callable[[Any], Any]) -> Any:
    """Run a plan: ``execute`` each step it yields and send back the answer, or throw the error
    (an interruption too) into it; return the plan's value."""
    stepper = _Stepper(plan)
    while not stepper.done:
        stepper.resume(_outcome(execute, stepper.step))
    return stepper.value


async def drive_async(
    plan: Generator[Any, Any, Any], execute: Callable[[Any], Awaitable[Any]]
) -> Any:
    """:func:`drive` with a coroutine ``execute``."""
    stepper = _Stepper(plan)
    while not stepper.done:
        stepper.resume(await _outcome_async(execute, stepper.step))
    return stepper.value


def _outcome(execute: Callable[[Any], Any], step: Any) -> tuple[Any, BaseException | None]:
    try:
        return execute(step), None
    except BaseException as error:
        return None, error


async def _outcome_async(
    execute: Callable[[Any], Awaitable[Any]], step: Any
) -> tuple[Any, BaseException | None]:
    try:
        return await execute(step), None
    except BaseException as error:
        return None, error


def _explained(call: Call) -> Plan[Any]:
    """``call``; where it is a HEAD refused without a reason, the GET's refusal, which has one."""
    try:
        return (yield call)
    except Exception as error:
        if call.method not in _GET_OF_HEAD or getattr(error, "meta", None) is None:
            raise
        if getattr(error, "body", None) not in (None, ""):
            raise
        try:
            yield Call(_GET_OF_HEAD[call.method], call.kwargs, call.options)
        except Exception as explained:  # the same refusal, with its reason
            raise explained from error
        raise


def _client(client: Any, step: Call | Bulk) -> Any:
    """``client`` with the transport options of ``step``."""
    return client.options(**step.options) if step.options else client


def _bound(client: Any, call: Call) -> Any:
    return operator.attrgetter(call.method)(_client(client, call))


class _ThreadHandle:
    """A plan running on a daemon thread (cancelling it is the plan's stop event's job)."""

    def __init__(self, future: Future) -> None:
        self.future = future

    def cancel(self) -> None:
        self.future.cancel()


class SyncRuntime:
    """Plans on a synchronous client: each step carried out in place, concurrent plans on
    daemon threads."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def run(self, plan: Plan[Any]) -> Any:
        """Carry ``plan`` out; return its result."""
        return drive(plan, self.execute)

    def execute(self, step: Any) -> Any:
        """Carry one step out (see :mod:`es_scm.elastic.calls`)."""
        if isinstance(step, Call):
            return drive(_explained(step), self._call)
        if isinstance(step, Bulk):
            for ok, item in helpers.streaming_bulk(_client(self.client, step), **step.arguments):
                step.each(ok, item)
            return None
        if isinstance(step, Wait):
            if step.stop is None:
                time.sleep(step.seconds)
                return False
            return step.stop.wait(step.seconds)
        if isinstance(step, Compute):
            return step.function(*step.arguments)
        if isinstance(step, Read):
            return self._read(step)
        if isinstance(step, Start):
            return self._start(step.plan)
        if isinstance(step, Join):
            return step.handle.future.result()
        raise TypeError(f"not a step of a plan: {step!r}")

    def _call(self, call: Call) -> Any:
        return _bound(self.client, call)(**call.kwargs)

    @staticmethod
    def _read(step: Read) -> list[Any]:
        source = step.source
        if isinstance(source.items, AsyncIterable):
            raise TypeError("an async iterable of documents needs the asyncio API")
        if source.iterator is None:
            source.iterator = iter(source.items)
        return list(itertools.islice(source.iterator, step.size))

    def _start(self, plan: Plan[Any]) -> _ThreadHandle:
        future: Future = Future()

        def work() -> None:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(self.run(plan))
                except BaseException as error:
                    future.set_exception(error)

        Thread(target=work, name="es-scm-plan", daemon=True).start()
        return _ThreadHandle(future)


class AsyncRuntime:
    """Plans on an asyncio client: calls awaited, CPU work and the reading of a plain iterable in
    a worker thread, concurrent plans as tasks."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def run(self, plan: Plan[Any]) -> Any:
        """Carry ``plan`` out; return its result."""
        return await drive_async(plan, self.execute)

    async def execute(self, step: Any) -> Any:
        """Carry one step out (see :mod:`es_scm.elastic.calls`)."""
        if isinstance(step, Call):
            return await drive_async(_explained(step), self._call)
        if isinstance(step, Bulk):
            client = _client(self.client, step)
            async for ok, item in helpers.async_streaming_bulk(client, **step.arguments):
                step.each(ok, item)
            return None
        if isinstance(step, Wait):
            await asyncio.sleep(step.seconds)
            return step.stop is not None and step.stop.is_set()
        if isinstance(step, Compute):
            return await asyncio.to_thread(step.function, *step.arguments)
        if isinstance(step, Read):
            return await self._read(step)
        if isinstance(step, Start):
            return asyncio.ensure_future(self.run(step.plan))
        if isinstance(step, Join):
            return await step.handle
        raise TypeError(f"not a step of a plan: {step!r}")

    async def _call(self, call: Call) -> Any:
        return await _bound(self.client, call)(**call.kwargs)

    @staticmethod
    async def _read(step: Read) -> list[Any]:
        source: Source = step.source
        if isinstance(source.items, AsyncIterable):
            if source.iterator is None:
                source.iterator = aiter(source.items)
            batch = []
            while len(batch) < step.size:
                item = await anext(source.iterator, _END)
                if item is _END:
                    break
                batch.append(item)
            return batch
        if source.iterator is None:
            source.iterator = iter(source.items)
        return await asyncio.to_thread(lambda: list(itertools.islice(source.iterator, step.size)))
