"""The Elasticsearch side: connection, schema, ingestion, the query encoder, search.

Data flows one way: documents are encoded by the schema and bulk-ingested
(:mod:`~es_scm.elastic.ingest`, :mod:`~es_scm.elastic.bulk`); queries are encoded
(:mod:`~es_scm.elastic.query`), retrieved and exactly rescored by a :class:`Searcher`; hybrid
search fuses them with BM25 and, on request, with a kNN search of dense vectors
(:mod:`~es_scm.elastic.dense`: :class:`DenseOptions` for vectors es-scm computes,
:class:`DenseQuery` for a field and vector of your own).
:class:`SCMIndex` writes an index (``index.searcher`` searches it); :mod:`~es_scm.elastic.lifecycle`
deletes by id, and :mod:`~es_scm.elastic.aliases` swaps models behind an alias. Every operation is
written once for asyncio in ``es_scm/elastic/_async/``, and the sync one is generated in
``_sync/`` (the asyncio API: :mod:`es_scm.elastic.aio`).
"""

from es_scm.elastic._sync.aliases import AliasSearcher, reindex_into_alias, remove_swap_leftovers
from es_scm.elastic._sync.client import cluster_max_clauses, cluster_version
from es_scm.elastic._sync.index import SCMIndex
from es_scm.elastic._sync.searcher import Searcher
from es_scm.elastic.aliases import FLATTENED, AliasMovedError, AliasSwap, AliasSwapError
from es_scm.elastic.concurrency import Stop
from es_scm.elastic.connection import client_from_env
from es_scm.elastic.dense import DenseQuery, EncoderMismatchError
from es_scm.elastic.filters import UnknownFieldError, UnsafeFilterError
from es_scm.elastic.ingest import IngestError, IngestInterrupted, IngestReport
from es_scm.elastic.lifecycle import DeleteReport
from es_scm.elastic.query import QueryTooLongError
from es_scm.elastic.results import (
    BatchSearchError,
    Hit,
    NotProvenError,
    PartialResultError,
    SearchResult,
)
from es_scm.elastic.schema import IndexNotFoundError, ModelMismatchError, UnsupportedVersionError
from es_scm.options import DenseOptions

__all__ = [
    "FLATTENED",
    "AliasMovedError",
    "AliasSearcher",
    "AliasSwap",
    "AliasSwapError",
    "BatchSearchError",
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
