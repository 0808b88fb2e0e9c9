""":meth:`es_scm.model.SoftCosineModel.build` and what it fits: the vocabulary, S, the unseen words.

``build`` is defined here, on :class:`ModelFitting`, which the model inherits: its arguments are
checked once into a :class:`SimilarityRecipe`, and :func:`fit_parts` fits the parts.

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
from typing import Any, TypeVar

import numpy as np

from es_scm.defaults import SIMILARITY_DEFAULTS, UNSEEN_LIMIT
from es_scm.model.parallel import count_texts
from es_scm.model.similarity_source import EmbeddingsLike, SimilaritySource, similarity_source
from es_scm.model.text import Tokenizer
from es_scm.model.trained import own_corpus_sink, resolve_embeddings
from es_scm.model.vectorizer import WeightingLike
from es_scm.model.vocabulary import Vocabulary
from es_scm.options import LevenshteinOptions, SimilarityOptions
from es_scm.similarity import TermSimilarityMatrix
from es_scm.similarity.factory import (
    SimilarityLike,
    build_similarity,
    build_unseen,
    levenshtein_options,
)
from es_scm.similarity.sources import DTYPE
from es_scm.similarity.unseen import UnseenTerms
from es_scm.validation import NON_NEGATIVE_INT, POSITIVE_INT, OrNone, check, check_dtype

__all__ = ["ModelFitting", "SimilarityRecipe", "fit_parts", "similarity_recipe"]

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
) -> SimilarityRecipe:
    """The checked recipe of ``build``'s arguments: each value read and checked here, once."""
    return SimilarityRecipe(
        similarity_source(embeddings),
        similarity,
        levenshtein_options(levenshtein),
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
            vocabulary.terms, vectors, limit=recipe.unseen_limit, options=recipe.options
        )
    logger.info("S: %d non-zeros (%.1fs)", matrix.nnz, time.perf_counter() - started)
    return tokenizer, vocabulary, matrix, unseen


_Model = TypeVar("_Model", bound="ModelFitting")


class ModelFitting:
    """:meth:`build`, which :class:`~es_scm.model.SoftCosineModel` inherits: a model fitted on a
    corpus, made with ``cls(tokenizer, vocabulary, S, document_weighting, query_weighting,
    unseen=...)``."""

    __slots__ = ()

    @classmethod
    def build(
        cls: type[_Model],
        texts: Iterable[str],
        embeddings: EmbeddingsLike = None,
        *,
        tokenizer: Tokenizer | None = None,
        min_df: int | float = 1,
        max_df: int | float = 1.0,
        max_terms: int | None = None,
        document_weighting: WeightingLike = None,
        query_weighting: WeightingLike = None,
        similarity: SimilarityLike = None,
        levenshtein: bool | float | LevenshteinOptions = False,
        nonzero_limit: int | None = SIMILARITY_DEFAULTS.nonzero_limit,
        threshold: float = SIMILARITY_DEFAULTS.threshold,
        exponent: float = SIMILARITY_DEFAULTS.exponent,
        symmetric: bool = SIMILARITY_DEFAULTS.symmetric,
        dominant: bool = SIMILARITY_DEFAULTS.dominant,
        neighbors: str = SIMILARITY_DEFAULTS.neighbors,
        column_order: str = SIMILARITY_DEFAULTS.column_order,
        dtype: np.dtype | type = DTYPE,
        batch_size: int | None = None,
        n_jobs: int | None = None,
        unseen_limit: int = UNSEEN_LIMIT,
    ) -> _Model:
        """Fit the vocabulary in one pass over ``texts`` and build S over its terms.

        Parameters
        ----------
        texts : iterable of str
            The corpus; may be a one-shot iterator (it is read exactly once).
        embeddings : WordEmbeddings, gensim KeyedVectors, str, list of pairs, optional
            The source of S (:mod:`es_scm.model.similarity_source`), checked before the corpus
            is read: word vectors for :meth:`TermSimilarityMatrix.from_embeddings`;
            ``"train[:word2vec|fasttext]"`` or an ``EmbeddingTraining`` trains them on ``texts``
            (or on its background corpus) first, deterministically and cached; ``"auto"``
            chooses by the corpus's size; ``(weight, embeddings)`` pairs combine their matrices.
            None (and no ``similarity`` or ``levenshtein``): S = I, the plain cosine.
        tokenizer : Tokenizer, optional
            Defaults to ``Tokenizer()``.
        min_df, max_df, max_terms
            Vocabulary pruning; see :class:`Vocabulary`.
        document_weighting, query_weighting : TermWeighting, str, dict or None
            See the class; the default is :data:`es_scm.defaults.DEFAULT_WEIGHTING` on both sides.
        similarity : TermSimilarityMatrix or callable, optional
            A ready S (over the vocabulary's terms, or a superset that is then restricted to
            them), or a function ``terms -> TermSimilarityMatrix`` (e.g. a thesaurus with
            :meth:`TermSimilarityMatrix.from_pairs`). Excludes ``embeddings`` and ``levenshtein``.
        levenshtein : bool, float or LevenshteinOptions, default=False
            Use edit-distance similarity (:meth:`TermSimilarityMatrix.from_levenshtein`). Alone,
            it is S; with ``embeddings``, ``True`` averages the two matrices and a float λ in
            (0, 1) gives ``λ·S_levenshtein + (1 − λ)·S_embeddings`` off the unit diagonal.
        nonzero_limit, threshold, exponent, symmetric, dominant, neighbors, column_order
            How S is built (:class:`~es_scm.options.SimilarityOptions`, checked together), with
            the defaults of :data:`es_scm.defaults.SIMILARITY_DEFAULTS`; ``neighbors="gensim"``
            gives gensim's matrix bit for bit, ``column_order="id"`` fills S's columns by term id
            instead of rarest term first.
        dtype, batch_size
            S's float dtype and the terms per matrix product (see ``from_embeddings``).
        n_jobs : int or None, default=None
            Worker processes that tokenize and count the corpus (:mod:`es_scm.model.parallel`;
            the vocabulary is the same whatever their number). ``None`` uses every CPU for a
            corpus of 20,000 texts or more where processes can be forked, ``1`` none, ``-1``
            every CPU. Embeddings trained on ``texts`` read them in-process.
        unseen_limit : int, default=UNSEEN_LIMIT
            Query words outside the vocabulary get a column of S from the embeddings (so
            "automobile" finds "car" in a corpus that only says "car";
            :mod:`es_scm.similarity.unseen`): the first ``unseen_limit`` words of each
            embeddings source outside the vocabulary (the most frequent, for GloVe). 0: none.

        Returns
        -------
        SoftCosineModel
        """
        options = SimilarityOptions(
            nonzero_limit, threshold, exponent, symmetric, dominant, neighbors, column_order
        )
        recipe = similarity_recipe(
            embeddings, similarity, levenshtein, options, dtype, batch_size, unseen_limit
        )
        vocabulary = Vocabulary(min_df=min_df, max_df=max_df, max_terms=max_terms)
        parts = fit_parts(texts, recipe, tokenizer=tokenizer, vocabulary=vocabulary, n_jobs=n_jobs)
        return cls(*parts[:3], document_weighting, query_weighting, unseen=parts[3])
