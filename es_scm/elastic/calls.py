"""Elasticsearch work as data: the steps a plan yields, free of I/O.

A *plan* is a generator that yields the step it needs next and receives its answer (or has its
exception thrown in); its return value is the plan's result. Every operation of es-scm — a
search, an index creation, an ingestion, a deletion, an alias swap — is written once as a plan,
and one of the two runtimes of :mod:`es_scm.elastic.runtime` carries its steps out, on an
:class:`elasticsearch.Elasticsearch` client or on an :class:`elasticsearch.AsyncElasticsearch`
one. The steps:

:class:`Call`
    One API call of the client, answered with its response.
:class:`Bulk`
    A stream of bulk actions sent by the client's ``helpers.streaming_bulk`` (or its asyncio
    twin), each per-action result handed to a callback; answered with None.
:class:`Wait`
    Wait some seconds (giving up early when a stop event is set); answered with whether it did.
:class:`Compute`
    CPU work (vectorizing a batch): run in place, or in a worker thread by the asyncio runtime so
    that the event loop keeps serving; answered with the function's result.
:class:`Read`
    The next items of the documents a caller gave (an iterable, or an async iterable for the
    asyncio runtime); answered with a list, empty at the end.
:class:`Start` and :class:`Join`
    Run another plan concurrently (a thread, or an asyncio task) and get its result later: what
    lets ingestion keep several bulk requests in flight.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "WHOLE_SOURCE",
    "Bulk",
    "Call",
    "Compute",
    "Join",
    "Plan",
    "Read",
    "Start",
    "Wait",
    "search_call",
    "single",
]

T = TypeVar("T")

#: A plan whose result is a ``T``.
Plan = Generator[Any, Any, T]

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


@dataclass(frozen=True)
class Bulk:
    """Send ``arguments`` (the keyword arguments of ``helpers.streaming_bulk`` but the client)
    with the client's bulk helper, calling ``each(ok, item)`` for every action's result; the
    client is called with the transport ``options`` (``client.options(...)``)."""

    arguments: dict[str, Any]
    each: Callable[[bool, dict[str, Any]], None]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Wait:
    """Wait ``seconds``; give up as soon as ``stop`` is set (the answer: whether it was)."""

    seconds: float
    stop: threading.Event | None = None


@dataclass(frozen=True)
class Compute:
    """``function(*arguments)``: CPU work, off the event loop in the asyncio runtime."""

    function: Callable[..., Any]
    arguments: tuple[Any, ...] = ()


class Source:
    """The documents a caller gave, read in batches by :class:`Read` steps (an iterable, or an
    async iterable for the asyncio runtime); the runtime keeps its iterator here."""

    def __init__(self, items: Iterable[Any] | Any) -> None:
        self.items = items
        self.iterator: Any = None


@dataclass(frozen=True)
class Read:
    """The next ``size`` items of ``source`` (fewer at its end, none after it)."""

    source: Source
    size: int


@dataclass(frozen=True)
class Start:
    """Run ``plan`` concurrently; the answer is a handle for :class:`Join` (with ``cancel()``)."""

    plan: Plan[Any]


@dataclass(frozen=True)
class Join:
    """The result of the plan started as ``handle`` (its exception is raised)."""

    handle: Any


def search_call(**kwargs: Any) -> Call:
    """A ``search`` that fails when a shard fails: a partial result would be silently wrong
    (missing hits, and no proof of exactness)."""
    return Call("search", {**kwargs, "allow_partial_search_results": False})


def single(call: Call) -> Plan[Any]:
    """The plan of one call: its response."""
    return (yield call)
