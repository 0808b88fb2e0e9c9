"""es-scm: the Soft Cosine Measure as search on Elasticsearch.

SCM(x, y) = xᵀSy / (√(xᵀSx) · √(yᵀSy)) for weighted term vectors x, y and a term similarity
matrix S (Novotný, *Implementation Notes for the Soft Cosine Measure*, CIKM 2018).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from es_scm._version import __version__

_EXPORTS = {
    "Document": "es_scm.documents",
    "Tokenizer": "es_scm.model.text",
    "Vocabulary": "es_scm.model.text",
    "TermWeighting": "es_scm.model.text",
    "SoftCosineModel": "es_scm.model.soft_cosine",
    "BruteForceSearch": "es_scm.model.brute_force",
    "WordEmbeddings": "es_scm.similarity.embeddings",
    "TermSimilarityMatrix": "es_scm.similarity.matrix",
    "SCMIndex": "es_scm.elastic",
    "Searcher": "es_scm.elastic",
    "AsyncSCMIndex": "es_scm.elastic.aio",
    "AsyncSearcher": "es_scm.elastic.aio",
    "AsyncAliasSearcher": "es_scm.elastic.aio",
    "AliasSearcher": "es_scm.elastic",
    "async_client_from_env": "es_scm.elastic.aio",
    "client_from_env": "es_scm.elastic",
}

__all__ = [
    "AliasSearcher",
    "AsyncAliasSearcher",
    "AsyncSCMIndex",
    "AsyncSearcher",
    "BruteForceSearch",
    "Document",
    "SCMIndex",
    "Searcher",
    "SoftCosineModel",
    "TermSimilarityMatrix",
    "TermWeighting",
    "Tokenizer",
    "Vocabulary",
    "WordEmbeddings",
    "__version__",
    "async_client_from_env",
    "client_from_env",
]

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.documents import Document
    from es_scm.elastic import AliasSearcher, SCMIndex, Searcher, client_from_env
    from es_scm.elastic.aio import (
        AsyncAliasSearcher,
        AsyncSCMIndex,
        AsyncSearcher,
        async_client_from_env,
    )
    from es_scm.model.brute_force import BruteForceSearch
    from es_scm.model.soft_cosine import SoftCosineModel
    from es_scm.model.text import TermWeighting, Tokenizer, Vocabulary
    from es_scm.similarity.embeddings import WordEmbeddings
    from es_scm.similarity.matrix import TermSimilarityMatrix


def __dir__() -> list[str]:
    """The public API (:data:`__all__`, lazy exports included: tab completion lists
    ``AsyncSCMIndex`` too), not the module's helpers."""
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    # Lazy imports keep `import es_scm` cheap (no scipy/elasticsearch until needed).
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'es_scm' has no attribute {name!r}")
