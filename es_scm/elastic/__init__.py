"""The Elasticsearch side: connection, schema, ingestion, the query encoder, search.

Data flows one way: documents are encoded by the schema and bulk-ingested
(:mod:`~es_scm.elastic.ingest`); queries are encoded (:mod:`~es_scm.elastic.query`), retrieved
and exactly rescored (:mod:`~es_scm.elastic.searcher`). :class:`SCMIndex` is the facade.
"""

from es_scm.elastic.connection import client_from_env
from es_scm.elastic.index import SCMIndex
from es_scm.elastic.ingest import IngestReport
from es_scm.elastic.results import Hit, NotProvenError, SearchResult
from es_scm.elastic.schema import IndexNotFoundError, ModelMismatchError
from es_scm.elastic.searcher import Searcher

__all__ = [
    "Hit",
    "IndexNotFoundError",
    "IngestReport",
    "ModelMismatchError",
    "NotProvenError",
    "SCMIndex",
    "SearchResult",
    "Searcher",
    "client_from_env",
]
