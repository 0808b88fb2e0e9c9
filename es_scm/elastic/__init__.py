"""The Elasticsearch side: connection, schema, ingestion, the query encoder, search.

Data flows one way: documents are encoded by the schema and bulk-ingested
(:mod:`~es_scm.index.ingest`, :mod:`~es_scm.index.bulk`); queries are encoded
(:mod:`~es_scm.search.query`), retrieved and exactly rescored by a :class:`Searcher`; hybrid
search fuses them with BM25 and, on request, with a kNN search of dense vectors
(:mod:`~es_scm.index.dense`: :class:`DenseOptions` for vectors es-scm computes,
:class:`DenseQuery` for a field and vector of your own).
:class:`SCMIndex` writes an index (``index.searcher`` searches it); :mod:`~es_scm.index.lifecycle`
deletes by id, and :mod:`~es_scm.index.aliases` swaps models behind an alias. Every operation is
written once for asyncio in ``es_scm/elastic/_async/``, and the sync one is generated in
``_sync/`` (the asyncio API: :mod:`es_scm.elastic.aio`).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.elastic._sync.aliases import (
        AliasSearcher,
        reindex_into_alias,
        remove_swap_leftovers,
    )
    from es_scm.elastic._sync.client import cluster_max_clauses, cluster_version
    from es_scm.elastic._sync.index import SCMIndex
    from es_scm.elastic._sync.searcher import Searcher
    from es_scm.elastic.concurrency import Stop
    from es_scm.elastic.connection import client_from_env
    from es_scm.index.aliases import FLATTENED, AliasMovedError, AliasSwap, AliasSwapError
    from es_scm.index.dense import DenseQuery, EncoderMismatchError
    from es_scm.index.ingest import IngestError, IngestInterrupted, IngestReport
    from es_scm.index.lifecycle import DeleteReport
    from es_scm.index.schema import (
        IndexNotFoundError,
        ModelMismatchError,
        UnsupportedVersionError,
    )
    from es_scm.options import DenseOptions
    from es_scm.search.filters import UnknownFieldError, UnsafeFilterError
    from es_scm.search.query import QueryTooLongError
    from es_scm.search.results import (
        BatchSearchError,
        ConnectionLostError,
        Hit,
        NotProvenError,
        PartialResultError,
        SearchResult,
    )

#: Each public name → the module that defines it, imported on first use (PEP 562): importing
#: ``es_scm.elastic`` or one of its light submodules (``engines``, ``credentials``, ``filters``)
#: costs no ``elasticsearch`` client, scipy or model code until a name that needs them is used
#: (the command line's ``--help`` imports neither).
_EXPORTS = {
    "AliasSearcher": "es_scm.elastic._sync.aliases",
    "reindex_into_alias": "es_scm.elastic._sync.aliases",
    "remove_swap_leftovers": "es_scm.elastic._sync.aliases",
    "cluster_max_clauses": "es_scm.elastic._sync.client",
    "cluster_version": "es_scm.elastic._sync.client",
    "SCMIndex": "es_scm.elastic._sync.index",
    "Searcher": "es_scm.elastic._sync.searcher",
    "AliasMovedError": "es_scm.index.aliases",
    "AliasSwap": "es_scm.index.aliases",
    "AliasSwapError": "es_scm.index.aliases",
    "FLATTENED": "es_scm.index.aliases",
    "Stop": "es_scm.elastic.concurrency",
    "client_from_env": "es_scm.elastic.connection",
    "DenseQuery": "es_scm.index.dense",
    "EncoderMismatchError": "es_scm.index.dense",
    "UnknownFieldError": "es_scm.search.filters",
    "UnsafeFilterError": "es_scm.search.filters",
    "IngestError": "es_scm.index.ingest",
    "IngestInterrupted": "es_scm.index.ingest",
    "IngestReport": "es_scm.index.ingest",
    "DeleteReport": "es_scm.index.lifecycle",
    "QueryTooLongError": "es_scm.search.query",
    "BatchSearchError": "es_scm.search.results",
    "ConnectionLostError": "es_scm.search.results",
    "Hit": "es_scm.search.results",
    "NotProvenError": "es_scm.search.results",
    "PartialResultError": "es_scm.search.results",
    "SearchResult": "es_scm.search.results",
    "IndexNotFoundError": "es_scm.index.schema",
    "ModelMismatchError": "es_scm.index.schema",
    "UnsupportedVersionError": "es_scm.index.schema",
    "DenseOptions": "es_scm.options",
}

__all__ = [
    "FLATTENED",
    "AliasMovedError",
    "AliasSearcher",
    "AliasSwap",
    "AliasSwapError",
    "BatchSearchError",
    "ConnectionLostError",
    "DeleteReport",
    "DenseOptions",
    "DenseQuery",
    "EncoderMismatchError",
    "Hit",
    "IndexNotFoundError",
    "IngestError",
    "IngestInterrupted",
    "IngestReport",
    "ModelMismatchError",
    "NotProvenError",
    "PartialResultError",
    "QueryTooLongError",
    "SCMIndex",
    "SearchResult",
    "Searcher",
    "Stop",
    "UnknownFieldError",
    "UnsafeFilterError",
    "UnsupportedVersionError",
    "client_from_env",
    "cluster_max_clauses",
    "cluster_version",
    "reindex_into_alias",
    "remove_swap_leftovers",
]


def __dir__() -> list[str]:
    """The public API (:data:`__all__`, the lazy names included), not the module's helpers."""
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value  # found once: later uses are plain attribute lookups
        return value
    raise AttributeError(f"module 'es_scm.elastic' has no attribute {name!r}")
