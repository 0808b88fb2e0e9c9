"""The sync and the asyncio API from one implementation: operations written once, as plans.

An operation is a method that returns a plan (:mod:`es_scm.elastic.calls`), decorated with
:class:`operation`. Called on an object of a sync class (:class:`SyncAPI`: ``SCMIndex``,
``Searcher``, ``AliasSearcher``), it runs its plan with a
:class:`~es_scm.elastic.runtime.SyncRuntime` and returns the result; on an object of an asyncio
class (:class:`AsyncAPI`: ``AsyncSCMIndex``, ...) it is a coroutine function whose plan an
:class:`~es_scm.elastic.runtime.AsyncRuntime` runs. Both show the plan's own signature and
docstring, so the two APIs cannot drift: they are the same methods. Type checkers see the same:
``operation`` is typed so that the method returns the plan's result on a sync object and an
awaitable of it on an asyncio one.

:func:`sync_function` and :func:`async_function` do the same for a plan function that takes the
client first (``reindex_into_alias``).

The runtimes are made per call: they hold nothing but the client.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from es_scm.elastic.calls import Plan
from es_scm.elastic.runtime import AsyncRuntime, SyncRuntime

__all__ = ["AsyncAPI", "SyncAPI", "async_function", "operation", "sync_function"]

S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")


class SyncAPI:
    """The sync side: an object's operations run on its ``client`` with a ``SyncRuntime``."""

    client: Any


class AsyncAPI:
    """The asyncio side: an object's operations are coroutines, run on its ``client`` with an
    ``AsyncRuntime``."""

    client: Any


def _result_signature(plan: Callable[..., Any], *, drop_first: bool) -> inspect.Signature:
    """The plan's signature with the plan's result (``Plan[R]``) as the return annotation."""
    signature = inspect.signature(plan)
    parameters = list(signature.parameters.values())[1 if drop_first else 0 :]
    returns = signature.return_annotation
    if isinstance(returns, str) and returns.startswith("Plan[") and returns.endswith("]"):
        returns = returns[len("Plan[") : -1]
    return signature.replace(parameters=parameters, return_annotation=returns)


def _shaped(function: Callable[..., Any], plan: Callable[..., Any], signature: Any) -> Any:
    functools.update_wrapper(function, plan)
    function.__signature__ = signature  # type: ignore[attr-defined]
    return function


class operation(Generic[S, P, R]):
    """A method that returns a plan, run by the runtime of the object it is called on."""

    def __init__(self, plan: Callable[Concatenate[S, P], Plan[R]]) -> None:
        self.plan = plan
        functools.update_wrapper(self, plan)
        self.__signature__ = _result_signature(plan, drop_first=False)
        self._bound_signature = _result_signature(plan, drop_first=True)

    def renamed(self, name: str, doc: str) -> operation[S, P, R]:
        """The same operation under another name and docstring (``upsert``)."""
        twin: operation[S, P, R] = operation(self.plan)
        twin.__name__ = twin.__qualname__ = name
        twin.__doc__ = doc
        return twin

    @overload
    def __get__(self, instance: None, owner: type) -> Callable[..., Any]: ...

    @overload
    def __get__(self, instance: AsyncAPI, owner: type) -> Callable[P, Coroutine[Any, Any, R]]: ...

    @overload
    def __get__(self, instance: S, owner: type) -> Callable[P, R]: ...

    def __get__(self, instance: Any, owner: type) -> Any:
        if instance is None:
            return self._unbound(owner)
        plan = functools.partial(self.plan, instance)
        if isinstance(instance, AsyncAPI):

            async def method(*args: Any, **kwargs: Any) -> Any:
                return await AsyncRuntime(instance.client).run(plan(*args, **kwargs))

        else:

            def method(*args: Any, **kwargs: Any) -> Any:
                return SyncRuntime(instance.client).run(plan(*args, **kwargs))

        method = _shaped(method, self.plan, self._bound_signature)
        method.__name__ = self.__name__
        method.__doc__ = self.__doc__
        method.plan = plan  # type: ignore[attr-defined]
        return method

    def _unbound(self, owner: type) -> Callable[..., Any]:
        """What the class shows: a function of the object, with the operation's signature (the
        plan's result) and docstring; ``.plan`` is the plan function."""
        name = self.__name__

        def function(instance: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(instance, name)(*args, **kwargs)

        function = _shaped(function, self.plan, self.__signature__)
        function.__name__ = name
        function.__doc__ = self.__doc__
        function.__qualname__ = f"{owner.__qualname__}.{name}"
        function.plan = self.plan  # type: ignore[attr-defined]
        return function


def sync_function(plan: Callable[Concatenate[Any, P], Plan[R]], name: str) -> Callable[..., R]:
    """``plan(client, ...)`` as a function ``name`` that runs it on the sync ``client``."""

    def function(client: Any, *args: Any, **kwargs: Any) -> Any:
        return SyncRuntime(client).run(plan(client, *args, **kwargs))

    return _named(_shaped(function, plan, _result_signature(plan, drop_first=False)), name)


def async_function(
    plan: Callable[Concatenate[Any, P], Plan[R]], name: str
) -> Callable[..., Coroutine[Any, Any, R]]:
    """``plan(client, ...)`` as a coroutine function ``name`` on the asyncio ``client``."""

    async def function(client: Any, *args: Any, **kwargs: Any) -> Any:
        return await AsyncRuntime(client).run(plan(client, *args, **kwargs))

    return _named(_shaped(function, plan, _result_signature(plan, drop_first=False)), name)


def _named(function: Any, name: str) -> Any:
    function.__name__ = function.__qualname__ = name
    return function
