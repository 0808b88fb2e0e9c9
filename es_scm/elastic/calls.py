"""Elasticsearch calls as data, and the two drivers that make them: sync and asyncio.

A *plan* is a generator that yields the :class:`Call` it needs next and receives its response
(or has its exception thrown in); its return value is the plan's result. :func:`run_sync` runs a
plan on :class:`elasticsearch.Elasticsearch`, :func:`run_async` on
:class:`elasticsearch.AsyncElasticsearch`: the logic of a search is written once
(:mod:`es_scm.elastic.plans`, :mod:`es_scm.elastic.hybrid`).
"""

from __future__ import annotations

import operator
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from elasticsearch import AsyncElasticsearch, Elasticsearch

__all__ = [
    "WHOLE_SOURCE",
    "Call",
    "Plan",
    "drive",
    "drive_async",
    "run_async",
    "run_sync",
    "search_call",
]

# Hits come with their whole _source (text, scm.vector, metadata): filtering it would make
# Elasticsearch parse and rewrite every hit's source, which costs more than sending it whole.
WHOLE_SOURCE = True


@dataclass(frozen=True)
class Call:
    """One Elasticsearch call: the client's method (dotted for namespaces), its arguments, and
    the transport options (``client.options(...)``) to call it with."""

    method: str
    kwargs: dict[str, Any]
    options: dict[str, Any] = field(default_factory=dict)


Plan = Generator[Call, Any, Any]


def search_call(**kwargs: Any) -> Call:
    """A ``search`` that fails when a shard fails: a partial result would be silently wrong
    (missing hits, and no proof of exactness)."""
    return Call("search", {**kwargs, "allow_partial_search_results": False})


def _bound(client: Any, call: Call) -> Any:
    target = client.options(**call.options) if call.options else client
    return operator.attrgetter(call.method)(target)


def drive(plan: Generator[Any, Any, Any], execute: Callable[[Any], Any]) -> Any:
    """Run any plan: ``execute`` each step it yields and send back the result, or throw the
    error into it (the plan may handle it; else it propagates); return the plan's value."""
    try:
        step = next(plan)
        while True:
            try:
                response = execute(step)
            except Exception as error:
                step = plan.throw(error)
            else:
                step = plan.send(response)
    except StopIteration as done:
        return done.value


async def drive_async(
    plan: Generator[Any, Any, Any], execute: Callable[[Any], Awaitable[Any]]
) -> Any:
    """:func:`drive` with a coroutine ``execute``."""
    try:
        step = next(plan)
        while True:
            try:
                response = await execute(step)
            except Exception as error:
                step = plan.throw(error)
            else:
                step = plan.send(response)
    except StopIteration as done:
        return done.value


def run_sync(plan: Plan, client: Elasticsearch) -> Any:
    """Run ``plan`` on a synchronous client; return its result."""
    return drive(plan, lambda call: _bound(client, call)(**call.kwargs))


async def run_async(plan: Plan, client: AsyncElasticsearch) -> Any:
    """Run ``plan`` on an asyncio client; return its result."""
    return await drive_async(plan, lambda call: _bound(client, call)(**call.kwargs))
