"""What :meth:`es_scm.model.SoftCosineModel.build` fits: the vocabulary, S and the unseen words.

One pass over the corpus fits the vocabulary (in worker processes for large corpora, or teeing
the tokens to a sentence file when word vectors are, or may be, trained on them:
:mod:`es_scm.model.trained`); then the embeddings are chosen and trained if need be, S is built
over the vocabulary's terms (:func:`es_scm.similarity.factory.build_similarity`), and the words
outside the vocabulary that a query may use are kept
(:func:`es_scm.similarity.factory.build_unseen`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from es_scm.defaults import SIMILARITY_DEFAULTS
from es_scm.model.parallel import count_texts
from es_scm.model.text import Tokenizer
from es_scm.model.trained import own_corpus_sink, resolve_embeddings
from es_scm.model.vocabulary import Vocabulary
from es_scm.similarity import TermSimilarityMatrix
from es_scm.similarity.factory import SimilarityLike, build_similarity, build_unseen
from es_scm.similarity.unseen import UnseenTerms
from es_scm.validation import NON_NEGATIVE_INT, check

__all__ = ["fit_parts"]

logger = logging.getLogger(__name__)


def fit_parts(
    texts: Iterable[str],
    embeddings: Any,
    *,
    tokenizer: Tokenizer | None,
    vocabulary: Vocabulary,
    similarity: SimilarityLike,
    levenshtein: bool | float,
    n_jobs: int | None,
    unseen_limit: int,
    similarity_options: dict[str, Any],
) -> tuple[Tokenizer, Vocabulary, TermSimilarityMatrix, UnseenTerms | None]:
    """The tokenizer, the fitted vocabulary, S and the unseen words (the arguments of ``build``)."""
    allowed = {*SIMILARITY_DEFAULTS, "dtype", "batch_size"}
    unknown = sorted(set(similarity_options) - allowed)
    if unknown:
        raise TypeError(f"SoftCosineModel.build() got an unexpected keyword {unknown[0]!r}")
    tokenizer = Tokenizer() if tokenizer is None else tokenizer
    started = time.perf_counter()
    sink = own_corpus_sink(embeddings)
    if sink is None:
        vocabulary.fit_counts(count_texts(texts, tokenizer, n_jobs=n_jobs))
    else:  # the tokens are written for the training as they pass, in order
        vocabulary.fit(sink.tee(tokenizer.tokenize_many(texts)))
    logger.info(
        "vocabulary: %d terms from %d documents (%.1fs)",
        len(vocabulary),
        vocabulary.num_documents,
        time.perf_counter() - started,
    )
    started = time.perf_counter()
    embeddings, choice = resolve_embeddings(embeddings, tokenizer, vocabulary.terms, sink)
    matrix = build_similarity(
        vocabulary.terms,
        embeddings,
        similarity=similarity,
        levenshtein=levenshtein,
        document_frequencies=vocabulary.document_frequencies,
        options=similarity_options,
    )
    if choice is not None:  # what embeddings="auto" chose, and why
        matrix.build_info = {**matrix.build_info, "auto": choice}
    unseen = None
    if similarity is None:
        limit = check(unseen_limit, "unseen_limit", NON_NEGATIVE_INT)
        options = {k: v for k, v in similarity_options.items() if k in SIMILARITY_DEFAULTS}
        unseen = build_unseen(vocabulary.terms, embeddings, limit=limit, options=options)
    logger.info("S: %d non-zeros (%.1fs)", matrix.nnz, time.perf_counter() - started)
    return tokenizer, vocabulary, matrix, unseen
