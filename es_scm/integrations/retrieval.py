"""What the framework retrievers share: which searcher they search with, how, and what a hit
becomes.

A retriever holds one es-scm searcher, sync or asyncio (given as the searcher itself or as the
index whose ``searcher`` it is), and one :class:`Retrieval`: the searcher method that its
``mode`` names and that method's keyword arguments, checked once. Both check their options
with :meth:`Retrieval.of_fields`, on the values as given (no framework converts them first), so
they take and refuse the same values in the same words. The framework modules turn
each :class:`~es_scm.elastic.Hit` into their own document with :func:`hit_text` (the stored
text) and :func:`hit_metadata` (the document's metadata plus the hit's id, score, scores by leg
and explanation).

Which calls work with which searcher: a sync one (``SCMIndex``, ``Searcher``,
``AliasSearcher``) serves both the framework's sync and async calls, the async ones running the
sync search in a worker thread (the ``Elasticsearch`` client is thread-safe); an asyncio one
(``AsyncSCMIndex``, ``AsyncSearcher``, ``AsyncAliasSearcher``) serves the async calls only, on
the caller's event loop, and a sync call raises ``TypeError`` saying so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any

from es_scm.elastic import SCMIndex, Searcher, client_from_env
from es_scm.elastic.aio import (
    AsyncSCMIndex,
    AsyncSearcher,
    async_client_from_env,
)
from es_scm.fusion import Fusion
from es_scm.index.schema import METADATA_FIELD, TEXT_FIELD
from es_scm.options.validation import POSITIVE_INT, Boolean, Options, OrNone, check
from es_scm.search.filters import Filter, filter_clauses
from es_scm.search.hybrid.config import resolve_fusion
from es_scm.search.methods import METHODS
from es_scm.search.results import Hit, SearchResult

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "MODES",
    "RETRIEVER_DEFAULTS",
    "RETRIEVER_KEYS",
    "AnySearcher",
    "Retrieval",
    "SearcherSource",
    "hit_metadata",
    "hit_text",
    "searcher_from_url",
    "searcher_of",
]

#: A retriever's ``mode`` → the searcher method it calls.
MODES = {method.mode: name for name, method in METHODS.items() if method.retrieves}
#: The metadata keys a retriever adds to the document's own (which they replace, if it has them).
RETRIEVER_KEYS = ("id", "score", "components", "explanation")

#: A retriever's options and their defaults, the same in every framework: hybrid search's top
#: 10 (BM25 fused with the SCM, the default that README and docs/QUALITY.md name; ``es-scm
#: search``'s too), ``mode="exact"`` for the SCM alone.
RETRIEVER_DEFAULTS: Mapping[str, Any] = {
    "mode": "hybrid",
    "k": 10,
    "filter": None,
    "explain": False,
    "fusion": None,
    "depth": None,
}

AnySearcher = Searcher | AsyncSearcher
#: What a retriever searches with: a searcher, or an index whose ``searcher`` it takes.
SearcherSource = AnySearcher | SCMIndex | AsyncSCMIndex
_ASYNC = (AsyncSearcher,)
_MODES = Options(tuple(MODES))


def searcher_of(source: SearcherSource) -> AnySearcher:
    """The searcher of ``source``: an index's ``searcher``, or the searcher itself.

    Raises
    ------
    TypeError
        When ``source`` is neither an es-scm index nor an es-scm searcher.
    """
    if isinstance(source, SCMIndex | AsyncSCMIndex):
        return source.searcher
    if isinstance(source, Searcher | AsyncSearcher):
        return source
    raise TypeError(
        "searcher must be an es-scm SCMIndex, AsyncSCMIndex, Searcher, AsyncSearcher, "
        f"AliasSearcher or AsyncAliasSearcher, got {type(source).__name__}"
    )


@dataclass(frozen=True)
class Retrieval:
    """One retriever's search, checked: the searcher ``method`` that the ``mode`` names, the
    hits it asks for (``k``) and the method's other keyword arguments (``options``)."""

    mode: str
    method: str
    k: int
    options: Mapping[str, Any]

    @classmethod
    def of_fields(cls, fields: Mapping[str, Any]) -> Retrieval:
        """:meth:`of` a retriever's fields as they were given (``mode``, ``k``, ``filter``,
        ``explain``, ``fusion``, ``depth``; those left out take :data:`RETRIEVER_DEFAULTS`).

        A retriever calls it on the values as its caller wrote them, before any framework
        converts them: pydantic (LangChain's retriever is a pydantic model) turns ``k=True``
        into 1 and ``k="5"`` into 5, which :meth:`of` refuses, as the LlamaIndex retriever
        does. (Issue 34, item 8.)
        """
        chosen = {name: fields.get(name, value) for name, value in RETRIEVER_DEFAULTS.items()}
        mode, k = chosen.pop("mode"), chosen.pop("k")
        return cls.of(mode, k, **chosen)

    @classmethod
    def of(
        cls,
        mode: str,
        k: int,
        *,
        filter: Filter = None,
        explain: bool = False,
        fusion: Fusion | str | None = None,
        depth: int | None = None,
    ) -> Retrieval:
        """Check a retriever's options: each is refused in one line that names it.

        ``mode`` is ``"hybrid"`` (the retrievers' default), ``"exact"`` (``Searcher.search``),
        ``"native"``, ``"bm25"`` or ``"dense"`` (the methods of those names); ``explain`` is an
        option of every mode but ``"bm25"`` and ``"dense"``, ``fusion`` and ``depth`` of
        ``"hybrid"`` only. ``filter`` is checked as a query clause or a list of them here, and
        against the searcher's ``filter_policy`` when it searches.
        """
        mode = check(mode, "mode", _MODES)
        k = check(k, "k", POSITIVE_INT)
        given: dict[str, Any] = {
            "filter": None if filter is None else filter_clauses(filter),
            "explain": check(explain, "explain", Boolean()) or None,
            "fusion": fusion,
            "depth": check(depth, "depth", OrNone(POSITIVE_INT)),
        }
        options = {name: value for name, value in given.items() if value is not None}
        method = MODES[mode]
        for name in options:
            if name not in METHODS[method].options:
                takes = [option for option in METHODS[method].options if option != "from_"]
                raise ValueError(
                    f"{name} is not an option of mode={mode!r}; its options are {', '.join(takes)}"
                )
        if method == "hybrid":  # a fusion's name and the depth checked now, not at a search
            resolve_fusion(fusion, options.get("depth"), None)
        if filter is not None:  # the searcher reads the filter as given
            options["filter"] = filter
        return cls(mode, method, k, options)

    def run(self, source: SearcherSource, query: str) -> SearchResult:
        """The result of the search for ``query`` with a sync searcher.

        Raises
        ------
        TypeError
            With an asyncio searcher, which only the async calls can use.
        """
        searcher = searcher_of(source)
        if isinstance(searcher, _ASYNC):
            raise TypeError(
                f"this retriever searches with an {type(searcher).__name__}: use its async call "
                "(ainvoke, aretrieve), or give it a sync SCMIndex or Searcher"
            )
        result: SearchResult = getattr(searcher, self.method)(query, self.k, **self.options)
        return result

    async def arun(self, source: SearcherSource, query: str) -> SearchResult:
        """The result of the search for ``query``: awaited on an asyncio searcher, in a worker
        thread with a sync one."""
        searcher = searcher_of(source)
        if not isinstance(searcher, _ASYNC):
            return await asyncio.to_thread(self.run, searcher, query)
        result: SearchResult = await getattr(searcher, self.method)(query, self.k, **self.options)
        return result


def hit_text(hit: Hit) -> str:
    """The document's text, as es-scm stores it in ``_source`` (every index stores it)."""
    text: str = hit.source.get(TEXT_FIELD, "")
    return text


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """The document's metadata (the fields it was indexed with besides ``id`` and ``text``) plus
    the hit's ``id`` and ``score``, ``components`` (hybrid search: the score of each leg, by
    name) and ``explanation`` (with ``explain=True``: the SCM's term pairs, as
    :meth:`~es_scm.model.explanation.Explanation.to_dict` gives them)."""
    metadata = dict(hit.source.get(METADATA_FIELD) or {})
    metadata["id"] = hit.id
    metadata["score"] = hit.score
    if hit.components is not None:
        metadata["components"] = dict(hit.components)
    if hit.explanation is not None:
        metadata["explanation"] = hit.explanation.to_dict()
    return metadata


def searcher_from_url(
    url: str | None,
    index: str,
    model: SoftCosineModel | str | PathLike[str],
    *,
    asynchronous: bool = False,
    **searcher_options: Any,
) -> AnySearcher:
    """A searcher of ``index`` on a new client of ``url`` (None: ``$ES_URL``; credentials from
    the environment as :func:`~es_scm.elastic.client_from_env` reads them), with ``model`` or
    the model saved in that folder; ``asynchronous``: an :class:`AsyncSearcher` (the ``async``
    extra). Close its client when done (``searcher.client.close()``, awaited for the asyncio
    one)."""
    if not isinstance(model, str | PathLike):
        loaded = model
    else:
        from es_scm.model import SoftCosineModel

        loaded = SoftCosineModel.load(model)
    if asynchronous:
        return AsyncSearcher(async_client_from_env(url), index, loaded, **searcher_options)
    return Searcher(client_from_env(url), index, loaded, **searcher_options)
