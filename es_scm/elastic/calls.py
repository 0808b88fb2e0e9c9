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
    "single",
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


def single(call: Call) -> Plan:
    """The plan of one call: its response."""
    return (yield call)


# The GET that a HEAD call's method stands for: a HEAD answer has no body, so a refused one
# carries no reason (a missing privilege, a client too new for the server); the GET tells it.
_GET_OF_HEAD = {
    "exists": "get",
    "exists_source": "get_source",
    "indices.exists": "indices.get",
    "indices.exists_alias": "indices.get_alias",
    "indices.exists_index_template": "indices.get_index_template",
}


def _bound(client: Any, call: Call) -> Any:
    target = client.options(**call.options) if call.options else client
    return operator.attrgetter(call.method)(target)


def _reason_call(call: Call, error: Exception) -> Call | None:
    """The GET that gives the reason of ``error``, the bodiless refusal of a HEAD ``call``."""
    if call.method not in _GET_OF_HEAD or getattr(error, "meta", None) is None:
        return None
    if getattr(error, "body", None) not in (None, ""):
        return None
    return Call(_GET_OF_HEAD[call.method], call.kwargs, call.options)


def _execute_sync(client: Elasticsearch, call: Call) -> Any:
    try:
        return _bound(client, call)(**call.kwargs)
    except Exception as error:
        again = _reason_call(call, error)
        if again is None:
            raise
        try:
            _bound(client, again)(**again.kwargs)
        except Exception as explained:  # the same refusal, with its reason
            raise explained from error
        raise


async def _execute_async(client: AsyncElasticsearch, call: Call) -> Any:
    try:
        return await _bound(client, call)(**call.kwargs)
    except Exception as error:
        again = _reason_call(call, error)
        if again is None:
            raise
        try:
            await _bound(client, again)(**again.kwargs)
        except Exception as explained:  # the same refusal, with its reason
            raise explained from error
        raise


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
    return drive(plan, lambda call: _execute_sync(client, call))


async def run_async(plan: Plan, client: AsyncElasticsearch) -> Any:
    """Run ``plan`` on an asyncio client; return its result."""
    return await drive_async(plan, lambda call: _execute_async(client, call))
