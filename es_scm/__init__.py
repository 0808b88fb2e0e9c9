"""es-scm: the Soft Cosine Measure as search on Elasticsearch.

SCM(x, y) = xᵀSy / (√(xᵀSx) · √(yᵀSy)) for weighted term vectors x, y and a term similarity
matrix S (Novotný, *Implementation Notes for the Soft Cosine Measure*, CIKM 2018).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._version import __version__

_EXPORTS = {
    "Tokenizer": "es_scm.text",
    "Vocabulary": "es_scm.vocabulary",
    "TermWeighting": "es_scm.weighting",
    "WordEmbeddings": "es_scm.embeddings",
    "TermSimilarityMatrix": "es_scm.termsim",
    "SoftCosineModel": "es_scm.model",
    "LocalElasticsearch": "es_scm.es_local",
    "SCMIndex": "es_scm.index",
    "client_from_env": "es_scm.connection",
}

__all__ = [
    "LocalElasticsearch",
    "SCMIndex",
    "SoftCosineModel",
    "TermSimilarityMatrix",
    "TermWeighting",
    "Tokenizer",
    "Vocabulary",
    "WordEmbeddings",
    "__version__",
    "client_from_env",
]

if TYPE_CHECKING:  # pragma: no cover
    from .connection import client_from_env
    from .embeddings import WordEmbeddings
    from .es_local import LocalElasticsearch
    from .index import SCMIndex
    from .model import SoftCosineModel
    from .termsim import TermSimilarityMatrix
    from .text import Tokenizer
    from .vocabulary import Vocabulary
    from .weighting import TermWeighting


def __getattr__(name: str) -> Any:
    # Lazy imports keep `import es_scm` cheap (no scipy/elasticsearch until needed).
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'es_scm' has no attribute {name!r}")
