r"""What every search method shares: its request's common part, its plan, and how it is bound.

Pure code, no I/O. A search method is one module of :mod:`es_scm.search` (``exact``, ``native``,
``bm25``, ``dense``, ``rescore``, ``fast``, ``hybrid``) that owns

* its **request**: a frozen value (:class:`Page` and the method's own options), made by the
  method's request function — the public signature, with the method's docstring — which checks
  every option once, where it enters, and says what is wrong with a bad one in one line;
* its **plan**: a subclass of :class:`Plan`, the method's searches round trip by round trip
  (:meth:`Plan.next`), what it makes of their answers (:meth:`Plan.take`) and its result
  (:meth:`Plan.result`).

:func:`search_method` makes the two one :class:`SearchMethod`, which the registry
(:class:`es_scm.search.methods.SearchMethods`) holds under the searcher's method name. A searcher
inherits the registry, so each method is a method of the searcher with the request function's
signature and docstring (``searcher.hybrid(query, k, fusion=...)``): it checks the request with
the searcher's :class:`RequestContext` and runs its plan through the searcher's one loop
(``_run``). ``batch_search``, the command line's modes and the retrievers read the same registry.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Concatenate,
    Generic,
    ParamSpec,
    Protocol,
    TypeVar,
    overload,
)

from es_scm.options.defaults import MAX_QUERY_WORDS
from es_scm.options.validation import NON_NEGATIVE_INT, POSITIVE_INT, check
from es_scm.search.explain import explanation_of
from es_scm.search.filters import Filter, filter_clauses
from es_scm.search.query import ExpandedQuery, QueryAccount, QueryType, expand_query, query_text
from es_scm.search.results import Hit, SearchResult, Stored
from es_scm.search.target import Checked

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "Context",
    "Page",
    "Plan",
    "RequestContext",
    "SearchMethod",
    "msearch_lines",
    "page",
    "search_method",
]

P = ParamSpec("P")
R = TypeVar("R", covariant=True)
RequestT = TypeVar("RequestT")


@dataclass
class RequestContext:
    """What a request function reads beside its arguments: the searcher's ``max_words`` and
    ``filter_policy``, and the model's own hybrid settings (``model_hybrid``,
    :attr:`~es_scm.model.SoftCosineModel.hybrid`; None: the defaults). What a method derives
    from them is resolved once per context (:meth:`once`): a searcher keeps one per model."""

    max_words: int = MAX_QUERY_WORDS
    filter_policy: str = "any"
    model_hybrid: Mapping[str, Any] | None = None
    _resolved: dict[Any, Any] = field(default_factory=dict, repr=False)

    def once(self, key: Any, resolve: Callable[[], Any]) -> Any:
        """``resolve()``, computed once for ``key`` in this context."""
        if key not in self._resolved:
            self._resolved[key] = resolve()
        return self._resolved[key]


@dataclass(frozen=True)
class Page:
    """The part of every search request: the query ``text`` (as
    :func:`~es_scm.search.query.query_text` reads it) and its number of ``words``, the page
    (``k`` after ``from_``) and the filter clauses."""

    text: str
    words: int
    k: int
    from_: int
    filters: tuple[dict[str, Any], ...]

    @classmethod
    def of(
        cls, context: RequestContext, query: Any, k: Any, from_: Any = 0, filter: Filter = None
    ) -> dict[str, Any]:
        """The common options checked, as the keyword arguments of a request (a method's
        request class adds its own)."""
        k = check(k, "k", POSITIVE_INT)
        from_ = check(from_, "from_", NON_NEGATIVE_INT)
        filters = () if filter is None else filter_clauses(filter, context.filter_policy)
        if not isinstance(query, str):
            raise ValueError(f"query must be a str, got {type(query).__name__}")
        text, words = query_text(query, context.max_words)
        return {"text": text, "words": words, "k": k, "from_": from_, "filters": filters}

    @property
    def need(self) -> int:
        """How many of the best documents the page needs: ``from_ + k``."""
        return self.from_ + self.k


@dataclass(frozen=True)
class Context:
    """What a searcher's plans read: the ``model``, the passed model check (``checked``: the
    target, the side of S, the mapped fields), the cluster's clause limit (``clause_limit``),
    the form of the expanded query (``query_type``), exact search's largest window, and whether
    the cluster reports named queries' scores in an ``_msearch`` (``named_scores``: else hybrid
    search asks for BM25's scores of the SCM's candidates in a round trip of their own)."""

    model: SoftCosineModel
    checked: Checked
    clause_limit: int
    query_type: QueryType
    max_window: int
    named_scores: bool = True


class Plan:
    """One search of one method: the searches of each round trip, the answers taken, the
    result made (the module docstring).

    Subclasses declare the ``mode`` their hits follow (:attr:`SearchResult.mode`) and whether
    an unproven result is an error of the method (``raises_unproven``: exact search's).
    """

    mode: ClassVar[str]
    raises_unproven: ClassVar[bool] = False

    def __init__(self, request: Any, context: Context) -> None:
        self.request = request
        self.context = context
        self.target = context.checked.target
        self.account = QueryAccount()
        self.rounds = 0  # round trips answered
        self.started = time.perf_counter()

    def next(self) -> list[dict[str, Any]] | None:
        """The searches of the next round trip (keyword arguments of ``search``, with the
        index; ``"api": "mget"`` for an ``mget``), or None when the plan is done."""
        raise NotImplementedError

    def take(self, answers: Sequence[Mapping[str, Any]]) -> None:
        """The answers to the last :meth:`next`, in its order."""
        raise NotImplementedError

    def result(self) -> SearchResult:
        """The search's result, once :meth:`next` said that the plan is done."""
        raise NotImplementedError

    def _result(
        self,
        hits: list[Hit],
        *,
        candidates: int = 0,
        exact_guarantee: bool = False,
        notes: Sequence[str] = (),
        unproven: str | None = None,
        fusion_weights: Mapping[str, float] | None = None,
    ) -> SearchResult:
        return SearchResult(
            hits=hits,
            mode=self.mode,
            query_terms=self.account.query_terms,
            expansion_terms=self.account.expansion_terms,
            pruned_terms=self.account.pruned_terms,
            candidates=candidates,
            rounds=self.rounds,
            exact_guarantee=exact_guarantee,
            took_ms=(time.perf_counter() - self.started) * 1000,
            notes=(*self.account.notes, *notes),
            unproven=unproven,
            fusion_weights=fusion_weights,
        )

    def _expanded(self, budget: int, pruning: Any = None) -> ExpandedQuery:
        """The request's query expanded within ``budget`` clauses, its first phase pruned by
        ``pruning`` (:class:`~es_scm.search.query.Pruning`), and its account kept."""
        context = self.context
        expanded = expand_query(
            context.model, self.request.text, budget, context.checked.expansion, pruning
        )
        self.account = expanded.account(context.clause_limit)
        return expanded

    def _hit(
        self,
        stored: Stored,
        score: float,
        expanded: ExpandedQuery | None,
        *,
        native: float | None = None,
        components: dict[str, float | None] | None = None,
    ) -> Hit:
        explanation = None
        if getattr(self.request, "explain", False) and expanded is not None:
            explanation = explanation_of(self.context.model, expanded, stored)
        return Hit.of(
            stored, score, native_score=native, components=components, explanation=explanation
        )


def page(index: str, query: Mapping[str, Any], size: int, from_: int = 0) -> dict[str, Any]:
    """The keyword arguments of one ``search`` of ``query`` for ``size`` hits after ``from_``.

    The hits come with their whole ``_source`` (text, ``scm.vector``, metadata): filtering it
    would make Elasticsearch parse and rewrite every hit's source, which costs more than sending
    it whole. Total hits are not counted: counting every match would disable Lucene's skipping of
    documents that cannot reach the page (a short page says that every match was returned).
    """
    return {
        "index": index,
        "query": query,
        "from_": from_,
        "size": max(size, 0),
        "source": True,
        "track_total_hits": False,
    }


def msearch_lines(searches: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The header and body lines of one ``_msearch`` of searches given as keyword arguments of
    ``search`` (``index``, ``query``, ``from_``, ``size``, ``source``...), each refusing a partial
    answer as every search of es-scm does."""
    lines: list[dict[str, Any]] = []
    for search in searches:
        body = {
            _BODY_KEYS.get(key, key): value
            for key, value in search.items()
            if key not in _PARAMETERS
        }
        lines += [{"index": search["index"], "allow_partial_search_results": False}, body]
    return lines


_BODY_KEYS = {"from_": "from", "source": "_source"}  # keyword argument → JSON body key
# keyword arguments that are no part of a search's body: its index (in the header line), and
# the reporting of named queries' scores (a parameter of the whole _msearch)
_PARAMETERS = ("index", "include_named_queries_score")


class _Runs(Protocol[R]):
    """A searcher: what runs a method's plan on its request (``R``: a result, or an awaitable
    of one)."""

    def _run(self, plan: type[Plan], request: Any) -> R: ...

    def _request_context(self) -> RequestContext: ...


class SearchMethod(Generic[P, RequestT]):
    """A search method: its request function (the public signature and docstring, without the
    :class:`RequestContext` it takes first) and its plan. Bound to a searcher, it is that
    searcher's method (``searcher.native(query, k)``): the request checked, the plan run.

    Attributes
    ----------
    name : str
        The searcher's method name (set by the registry, :mod:`es_scm.search.methods`).
    plan : type[Plan]
    request : callable
        ``request(context, *args, **options)`` → the method's checked request.
    """

    def __init__(
        self, request: Callable[Concatenate[RequestContext, P], RequestT], plan: type[Plan]
    ) -> None:
        self.request = request
        self.plan = plan
        self.name = request.__name__
        functools.update_wrapper(self, request)  # type: ignore[arg-type]
        parameters = list(inspect.signature(request).parameters.values())[1:]
        self.__signature__ = inspect.Signature(parameters, return_annotation="SearchResult")

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @property
    def mode(self) -> str:
        """The ranking the method's hits follow (:attr:`SearchResult.mode`)."""
        return self.plan.mode

    @property
    def options(self) -> tuple[str, ...]:
        """The keyword arguments the method takes beside the query and ``k``."""
        return tuple(
            name
            for name, parameter in self.__signature__.parameters.items()
            if parameter.kind is parameter.KEYWORD_ONLY and name != "k"
        )

    @property
    def retrieves(self) -> bool:
        """Whether the method finds its own candidates for a query and ``k`` (every method but
        ``rescore``, which ranks given ones): what a command line's or a retriever's mode is."""
        parameter = self.__signature__.parameters.get("k")
        return parameter is not None and parameter.kind is parameter.POSITIONAL_OR_KEYWORD

    @overload
    def __get__(self, searcher: None, owner: type) -> SearchMethod[P, RequestT]: ...

    @overload
    def __get__(self, searcher: _Runs[R], owner: type) -> Callable[P, R]: ...

    def __get__(self, searcher: Any, owner: type) -> Any:
        if searcher is None:
            return self
        request, plan = self.request, self.plan

        def method(*args: Any, **options: Any) -> Any:
            return searcher._run(plan, request(searcher._request_context(), *args, **options))

        method.__name__ = self.name
        method.__qualname__ = f"{owner.__name__}.{self.name}"
        method.__doc__ = request.__doc__
        method.__signature__ = self.__signature__  # type: ignore[attr-defined]
        return method


def search_method(
    plan: type[Plan],
) -> Callable[[Callable[Concatenate[RequestContext, P], RequestT]], SearchMethod[P, RequestT]]:
    """The decorator that makes a request function and ``plan`` one :class:`SearchMethod`."""

    def make(request: Callable[Concatenate[RequestContext, P], RequestT]) -> SearchMethod:
        return SearchMethod(request, plan)

    return make
