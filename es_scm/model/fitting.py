"""What :meth:`es_scm.model.SoftCosineModel.build` fits: the vocabulary, S, the unseen words.

``build``'s arguments are checked once into a :class:`SimilarityRecipe`
(:func:`similarity_recipe`), and :func:`fit_parts` fits the parts.

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
from dataclasses import dataclass
from typing import Any

import numpy as np

from es_scm.model.parallel import count_texts
from es_scm.model.similarity_source import EmbeddingsLike, SimilaritySource, similarity_source
from es_scm.model.text import Tokenizer, Vocabulary
from es_scm.model.trained import own_corpus_sink, resolve_embeddings
from es_scm.options import LevenshteinOptions, SimilarityOptions
from es_scm.options.validation import NON_NEGATIVE_INT, POSITIVE_INT, OrNone, check, check_dtype
from es_scm.progress import Progress, tracked
from es_scm.similarity import TermSimilarityMatrix
from es_scm.similarity.factory import (
    SimilarityLike,
    build_similarity,
    build_unseen,
    levenshtein_options,
)
from es_scm.similarity.synonyms import Synonyms, as_synonyms
from es_scm.similarity.unseen import UnseenTerms

__all__ = ["SimilarityRecipe", "fit_parts", "similarity_recipe"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SimilarityRecipe:
    """How :meth:`SoftCosineModel.build` makes S and the unseen words, its arguments checked.

    Parameters
    ----------
    source : SimilaritySource or None
        Word vectors, or what makes them (:mod:`es_scm.model.similarity_source`).
    similarity : TermSimilarityMatrix, callable or None
        A ready S, or a function of the terms that makes it.
    levenshtein : LevenshteinOptions or None
    synonyms : Synonyms or None
        Synonym files mixed into S (:mod:`es_scm.similarity.synonyms`).
    options : SimilarityOptions
    dtype : numpy dtype
        S's float dtype (from word vectors).
    batch_size : int or None
        Terms per matrix product.
    unseen_limit : int
        Words outside the vocabulary kept per source of word vectors.
    """

    source: SimilaritySource | None
    similarity: SimilarityLike
    levenshtein: LevenshteinOptions | None
    synonyms: Synonyms | None
    options: SimilarityOptions
    dtype: np.dtype
    batch_size: int | None
    unseen_limit: int


def similarity_recipe(
    embeddings: EmbeddingsLike,
    similarity: SimilarityLike,
    levenshtein: bool | float | LevenshteinOptions,
    options: SimilarityOptions,
    dtype: Any,
    batch_size: int | None,
    unseen_limit: int,
    synonyms: Any = None,
) -> SimilarityRecipe:
    """The checked recipe of ``build``'s arguments: each value read and checked here, once."""
    return SimilarityRecipe(
        similarity_source(embeddings),
        similarity,
        levenshtein_options(levenshtein),
        as_synonyms(synonyms),
        options,
        check_dtype(dtype),
        check(batch_size, "batch_size", OrNone(POSITIVE_INT)),
        check(unseen_limit, "unseen_limit", NON_NEGATIVE_INT),
    )


def fit_parts(
    texts: Iterable[str],
    recipe: SimilarityRecipe,
    *,
    tokenizer: Tokenizer | None,
    vocabulary: Vocabulary,
    n_jobs: int | None,
) -> tuple[Tokenizer, Vocabulary, TermSimilarityMatrix, UnseenTerms | None]:
    """The tokenizer, the fitted vocabulary, S and the unseen words (the arguments of ``build``)."""
    tokenizer = Tokenizer() if tokenizer is None else tokenizer
    started = time.perf_counter()
    texts = tracked(texts, Progress(logger, "vocabulary", unit="documents"))
    sink = own_corpus_sink(recipe.source)
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
    vectors, choice = resolve_embeddings(recipe.source, tokenizer, vocabulary.terms, sink)
    matrix = build_similarity(
        vocabulary.terms,
        vectors,
        similarity=recipe.similarity,
        levenshtein=recipe.levenshtein,
        synonyms=recipe.synonyms,
        tokenize=tokenizer.tokenize,
        document_frequencies=vocabulary.document_frequencies,
        options=recipe.options,
        dtype=recipe.dtype,
        batch_size=recipe.batch_size,
    )
    if choice is not None:  # what embeddings="auto" chose, and why
        matrix.build_info = {**matrix.build_info, "auto": choice}
    unseen = None
    if recipe.similarity is None:
        unseen = build_unseen(
            vocabulary.terms,
            vectors,
            limit=recipe.unseen_limit,
            options=recipe.options,
            levenshtein=recipe.levenshtein,
            synonyms=recipe.synonyms,
        )
    logger.info("S: %d non-zeros (%.1fs)", matrix.nnz, time.perf_counter() - started)
    return tokenizer, vocabulary, matrix, unseen
