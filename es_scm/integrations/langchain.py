"""es-scm as a LangChain retriever: :class:`SCMRetriever`, a ``BaseRetriever`` over an es-scm
searcher.

Needs the ``langchain`` extra (``pip install 'es-scm[langchain]'``: ``langchain-core``).

Examples
--------
>>> from es_scm.integrations.langchain import SCMRetriever             # doctest: +SKIP
>>> retriever = SCMRetriever(searcher=SCMIndex(client, "news", model), k=5)  # doctest: +SKIP
>>> documents = retriever.invoke("president greets the press")        # doctest: +SKIP
>>> documents[0].metadata["score"]                                     # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import TYPE_CHECKING, Any

from es_scm.extras import require
from es_scm.fusion import Fusion
from es_scm.integrations.retrieval import (
    Retrieval,
    SearcherSource,
    hit_metadata,
    hit_text,
    searcher_from_url,
)

if TYPE_CHECKING:  # pragma: no cover
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from pydantic import model_validator

    from es_scm.model import SoftCosineModel
    from es_scm.search.results import SearchResult
else:
    _FEATURE = "es_scm.integrations.langchain (the LangChain retriever)"
    BaseRetriever = require("langchain_core.retrievers", _FEATURE).BaseRetriever
    Document = require("langchain_core.documents", _FEATURE).Document
    model_validator = require("pydantic", _FEATURE).model_validator  # langchain-core's own

__all__ = ["SCMRetriever"]


class SCMRetriever(BaseRetriever):
    """A LangChain retriever that searches an es-scm index: hybrid search's top ``k`` by default.

    A pydantic model, as every LangChain retriever: its fields are keyword arguments, and it is
    used through the ``Runnable`` calls (``invoke``, ``ainvoke``, ``batch``, ``abatch``). Each
    result is a ``Document`` whose ``page_content`` is the document's stored text, ``id`` its
    es-scm id, and ``metadata`` the document's metadata plus ``id``, ``score``, ``components``
    (hybrid: the score of each leg) and ``explanation`` (with ``explain=True``); those keys
    replace the document's own of the same names (docs/INTEGRATIONS.md).

    Parameters
    ----------
    searcher : SCMIndex, Searcher, AliasSearcher, AsyncSCMIndex, AsyncSearcher or AsyncAliasSearcher
        What it searches with (an index: its ``searcher``). A sync one serves ``invoke`` and
        ``ainvoke`` (the search in a worker thread); an asyncio one ``ainvoke`` only (``invoke``
        raises ``TypeError``).
    mode : {"hybrid", "exact", "native", "bm25", "dense"}
        The ranking: ``"hybrid"`` (default) the searcher's ``hybrid``, BM25 fused with the SCM
        (the best of the modes on the test collections, docs/QUALITY.md); ``"exact"`` its
        ``search``, the SCM alone, provably the brute-force top k by the SCM; ``"native"``,
        ``"bm25"`` and ``"dense"`` (an index with dense vectors) its methods of those names.
    k : int
        How many documents a query returns (default 10, as the searcher's methods).
    filter : dict or list of dict, optional
        An Elasticsearch query clause, or a list of them, that the documents must match
        (``{"term": {"metadata.topic": "sports"}}``), as the searcher takes it.
    explain : bool
        Put each hit's explanation (its SCM term pair by term pair) in ``metadata
        ["explanation"]``; not with ``mode="bm25"`` or ``"dense"``.
    fusion : Fusion or str, optional
        Hybrid search only (the default mode): the fusion (``"max"``, ``"linear"``,
        ``"zscore"``, ``"rrf"``, or a :class:`~es_scm.fusion.Fusion`); None: the model's own,
        else the default.
    depth : int, optional
        Hybrid search only (the default mode): how deep each leg retrieves; None: the model's,
        else the default.

    Raises
    ------
    pydantic.ValidationError
        At construction (a ``ValueError``), for a bad option, with the one line that names it
        (an option the mode does not take too).
    """

    searcher: SearcherSource
    mode: str = "hybrid"
    k: int = 10
    # es-scm checks the filter (Retrieval.of, then the searcher's policy), not pydantic
    filter: Any = None
    explain: bool = False
    fusion: Fusion | str | None = None
    depth: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _check_options(cls, data: Any) -> Any:
        """A bad option is refused when the retriever is made, checked as given: pydantic's own
        validation, which runs after, would have turned ``k=True`` into 1 and ``k="5"`` into 5
        (issue 34, item 8)."""
        if isinstance(data, Mapping):
            Retrieval.of_fields(data)
        return data

    @classmethod
    def from_url(
        cls,
        url: str | None,
        index: str,
        model: SoftCosineModel | str | PathLike[str],
        *,
        asynchronous: bool = False,
        searcher_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> SCMRetriever:
        """A retriever of ``index`` at ``url`` (None: ``$ES_URL``) searched with ``model`` (or
        the model saved in that folder), on a new client; ``asynchronous``: an asyncio client
        (``ainvoke`` only). ``options`` are the retriever's fields, ``searcher_options`` the
        searcher's (``filter_policy``...). Close the client when done:
        ``retriever.searcher.client.close()`` (awaited for an asyncio one)."""
        searcher = searcher_from_url(
            url, index, model, asynchronous=asynchronous, **(searcher_options or {})
        )
        return cls(searcher=searcher, **options)

    def _retrieval(self) -> Retrieval:
        return Retrieval.of(
            self.mode,
            self.k,
            filter=self.filter,
            explain=self.explain,
            fusion=self.fusion,
            depth=self.depth,
        )

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return _documents(self._retrieval().run(self.searcher, query))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return _documents(await self._retrieval().arun(self.searcher, query))


def _documents(result: SearchResult) -> list[Document]:
    """The hits as LangChain documents, best first."""
    return [
        Document(page_content=hit_text(hit), metadata=hit_metadata(hit), id=hit.id)
        for hit in result.hits
    ]
