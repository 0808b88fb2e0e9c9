"""es-scm as a LlamaIndex retriever: :class:`SCMRetriever`, a ``BaseRetriever`` over an es-scm
searcher.

Needs the ``llamaindex`` extra (``pip install 'es-scm[llamaindex]'``: ``llama-index-core``).

Examples
--------
>>> from es_scm.integrations.llamaindex import SCMRetriever            # doctest: +SKIP
>>> retriever = SCMRetriever(SCMIndex(client, "news", model), k=5)     # doctest: +SKIP
>>> nodes = retriever.retrieve("president greets the press")           # doctest: +SKIP
>>> nodes[0].score, nodes[0].node.text                                 # doctest: +SKIP
"""

from __future__ import annotations

from os import PathLike
from typing import TYPE_CHECKING, Any

from es_scm.extras import require
from es_scm.fusion import Fusion
from es_scm.integrations.retrieval import (
    RETRIEVER_KEYS,
    Retrieval,
    SearcherSource,
    hit_metadata,
    hit_text,
    searcher_from_url,
    searcher_of,
)
from es_scm.search.filters import Filter

if TYPE_CHECKING:  # pragma: no cover
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from es_scm.model import SoftCosineModel
    from es_scm.search.results import SearchResult
else:
    _FEATURE = "es_scm.integrations.llamaindex (the LlamaIndex retriever)"
    BaseRetriever = require("llama_index.core.retrievers", _FEATURE).BaseRetriever
    _schema = require("llama_index.core.schema", _FEATURE)
    NodeWithScore, QueryBundle, TextNode = (
        _schema.NodeWithScore,
        _schema.QueryBundle,
        _schema.TextNode,
    )

__all__ = ["SCMRetriever"]


class SCMRetriever(BaseRetriever):
    """A LlamaIndex retriever that searches an es-scm index: hybrid search's top ``k`` by default.

    Used through LlamaIndex's calls (``retrieve``, ``aretrieve``, or a query engine built on
    it). Each result is a ``NodeWithScore``: ``score`` is the hit's score, ``node`` a
    ``TextNode`` whose ``text`` is the document's stored text, ``id_`` its es-scm id, and
    ``metadata`` the document's metadata plus ``id``, ``score``, ``components`` (hybrid: the
    score of each leg) and ``explanation`` (with ``explain=True``); those keys replace the
    document's own of the same names. All but ``id`` are left out of the text that an LLM or an
    embedding model sees of the node (``excluded_llm_metadata_keys``,
    ``excluded_embed_metadata_keys``), which keeps the document's own metadata
    (docs/INTEGRATIONS.md).

    Parameters
    ----------
    searcher : SCMIndex, Searcher, AliasSearcher, AsyncSCMIndex, AsyncSearcher or AsyncAliasSearcher
        What it searches with (an index: its ``searcher``). A sync one serves ``retrieve`` and
        ``aretrieve`` (the search in a worker thread); an asyncio one ``aretrieve`` only
        (``retrieve`` raises ``TypeError``).
    mode : {"hybrid", "exact", "native", "bm25", "dense"}
        The ranking: ``"hybrid"`` (default) the searcher's ``hybrid``, BM25 fused with the SCM
        (the best of the modes on the test collections, docs/QUALITY.md); ``"exact"`` its
        ``search``, the SCM alone, provably the brute-force top k by the SCM; ``"native"``,
        ``"bm25"`` and ``"dense"`` (an index with dense vectors) its methods of those names.
    k : int
        How many nodes a query returns (default 10, as the searcher's methods).
    filter : dict or list of dict, optional
        An Elasticsearch query clause, or a list of them, that the documents must match
        (``{"term": {"metadata.topic": "sports"}}``), as the searcher takes it.
    explain : bool
        Put each hit's explanation (its SCM term pair by term pair) in the node's
        ``metadata["explanation"]``; not with ``mode="bm25"`` or ``"dense"``.
    fusion : Fusion or str, optional
        Hybrid search only (the default mode): the fusion (``"max"``, ``"linear"``,
        ``"zscore"``, ``"rrf"``, or a :class:`~es_scm.fusion.Fusion`); None: the model's own,
        else the default.
    depth : int, optional
        Hybrid search only (the default mode): how deep each leg retrieves; None: the model's,
        else the default.
    callback_manager, verbose
        LlamaIndex's, passed to ``BaseRetriever``.

    Raises
    ------
    ValueError
        For a bad option, in one line that names it (an option the mode does not take too).
    TypeError
        When ``searcher`` is not an es-scm index or searcher.
    """

    def __init__(
        self,
        searcher: SearcherSource,
        *,
        mode: str = "hybrid",
        k: int = 10,
        filter: Filter = None,
        explain: bool = False,
        fusion: Fusion | str | None = None,
        depth: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        #: The es-scm searcher (an index's ``searcher`` when given an index).
        self.searcher = searcher_of(searcher)
        #: The search every query runs (the options checked).
        self.retrieval = Retrieval.of(
            mode, k, filter=filter, explain=explain, fusion=fusion, depth=depth
        )
        super().__init__(callback_manager=callback_manager, verbose=verbose)

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
        (``aretrieve`` only). ``options`` are the retriever's, ``searcher_options`` the
        searcher's (``filter_policy``...). Close the client when done:
        ``retriever.searcher.client.close()`` (awaited for an asyncio one)."""
        searcher = searcher_from_url(
            url, index, model, asynchronous=asynchronous, **(searcher_options or {})
        )
        return cls(searcher, **options)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes(self.retrieval.run(self.searcher, query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes(await self.retrieval.arun(self.searcher, query_bundle.query_str))


def _nodes(result: SearchResult) -> list[NodeWithScore]:
    """The hits as LlamaIndex nodes with their scores, best first."""
    # scores and explanations are not text for a prompt; the id stays, for citing the source
    hidden = [key for key in RETRIEVER_KEYS if key != "id"]
    return [
        NodeWithScore(
            node=TextNode(
                id_=hit.id,
                text=hit_text(hit),
                metadata=hit_metadata(hit),
                excluded_llm_metadata_keys=hidden,
                excluded_embed_metadata_keys=hidden,
            ),
            score=hit.score,
        )
        for hit in result.hits
    ]
