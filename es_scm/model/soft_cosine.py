"""The soft cosine model: tokenizer + vocabulary + term weighting + term similarity matrix S.

A :class:`SoftCosineModel` turns text into the weighted term vectors ``Wx`` of the soft vector
space model (Novotný, CIKM '18, Definition 3.1) and measures their soft cosine

    SCM(x, y) = (Wx)ᵀ S (Wy) / (√((Wx)ᵀ S (Wx)) · √((Wy)ᵀ S (Wy)))

(the remark to Lemma 3.3). It holds the text side (a tokenizer, a fitted vocabulary and a
weighting per role: texts are tokenized, counted against the vocabulary by
:class:`~es_scm.model.text.TermCounter`, one dictionary lookup per token, and weighted;
documents and queries are weighted apart; vectors are rows), S, and the words outside the
vocabulary that a query may use. It is one class, as scikit-learn's vectorizers are: fitted
state made once by :meth:`SoftCosineModel.build` (its parts fitted by :mod:`es_scm.model.fitting`)
or read by :meth:`SoftCosineModel.load`.

The model is saved as one bundle and identified by :attr:`SoftCosineModel.model_id`, a content
hash that changes iff something that can change a score changes
(:mod:`es_scm.model.persistence`), so an Elasticsearch index can record the model it was built
with.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from es_scm.fusion import hybrid_settings
from es_scm.model import persistence
from es_scm.model.explanation import Explanation, explain_query
from es_scm.model.fitting import fit_parts, similarity_recipe
from es_scm.model.queries import unseen_words
from es_scm.model.similarity_source import EmbeddingsLike
from es_scm.model.text import (
    Role,
    TermCounter,
    TermWeighting,
    TokenCounts,
    Tokenizer,
    Vocabulary,
    WeightingLike,
    as_weighting,
    query_weighting_for,
)
from es_scm.options import LevenshteinOptions, SimilarityOptions
from es_scm.options.defaults import SIMILARITY_DEFAULTS, UNSEEN_LIMIT
from es_scm.similarity import TermSimilarityMatrix
from es_scm.similarity.factory import SimilarityLike
from es_scm.similarity.scm import QueryVector
from es_scm.similarity.sources import DTYPE
from es_scm.similarity.unseen import UnseenTerms

__all__ = ["SoftCosineModel", "TokenCounts"]

logger = logging.getLogger(__name__)


class SoftCosineModel:
    """Text → weighted term vectors → exact soft cosine measure.

    Usually made with :meth:`build` or :meth:`load`; the constructor only bundles fitted parts.
    Texts become weighted vectors ``Wx`` with :meth:`vectorize`, :meth:`vectorize_many` and
    :meth:`counts`; :meth:`similarity`, :meth:`explain` and :meth:`query_vector` apply S.

    Parameters
    ----------
    tokenizer : Tokenizer
        Turns text into terms, for indexing and querying alike.
    vocabulary : Vocabulary
        A fitted vocabulary; its terms index the columns of every vector.
    document_weighting, query_weighting : TermWeighting, str, dict or None, default=None
        W for documents and for queries: a weighting, a spec (``"log-smooth"``, ``"bm25"``, see
        :meth:`TermWeighting.from_spec`) or a :meth:`TermWeighting.get_config` dict; ``None`` is
        :data:`es_scm.options.defaults.DEFAULT_WEIGHTING`. A ``None`` query weighting is the
        document weighting, or the default for BM25 documents
        (:func:`~es_scm.model.text.query_weighting_for`).
    similarity_matrix : TermSimilarityMatrix
        S, over exactly ``vocabulary.terms`` in the same order.
    hybrid : dict, optional
        How hybrid search fuses BM25 with this model's SCM unless told otherwise (``fusion``,
        ``alpha``, ``rrf_k``, ``depth``; :mod:`es_scm.fusion`): what ``es-scm tune`` found best.
        Saved with the model but not part of :attr:`model_id`: it changes no stored vector.
    unseen : UnseenTerms, optional
        Words outside the vocabulary that a query may use, with their similarities to the terms
        (:mod:`es_scm.similarity.unseen`; :meth:`build` makes them from its embeddings).

    Examples
    --------
    >>> model = SoftCosineModel.build(["Julius Caesar was killed", "Antony found Caesar dead"])
    >>> round(model.similarity("Caesar killed", "Caesar killed"), 6)
    1.0
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        vocabulary: Vocabulary,
        similarity_matrix: TermSimilarityMatrix,
        document_weighting: WeightingLike = None,
        query_weighting: WeightingLike = None,
        hybrid: Mapping[str, Any] | None = None,
        unseen: UnseenTerms | None = None,
    ) -> None:
        if not isinstance(tokenizer, Tokenizer):
            raise ValueError(f"tokenizer must be a Tokenizer, got {tokenizer!r}")
        if not isinstance(vocabulary, Vocabulary):
            raise ValueError(f"vocabulary must be a fitted Vocabulary, got {vocabulary!r}")
        self.tokenizer = tokenizer
        self.vocabulary = vocabulary
        self.document_weighting = as_weighting(document_weighting, "document_weighting")
        self.query_weighting = (
            query_weighting_for(self.document_weighting)
            if query_weighting is None
            else as_weighting(query_weighting, "query_weighting")
        )
        self._counter = TermCounter(tokenizer, vocabulary)
        self._global_weights: dict[str, np.ndarray] = {}  # idf per role, computed once
        if not isinstance(similarity_matrix, TermSimilarityMatrix):
            raise ValueError(
                f"similarity_matrix must be a TermSimilarityMatrix, got {similarity_matrix!r}"
            )
        if list(similarity_matrix.terms) != vocabulary.terms:
            raise ValueError(
                "the term similarity matrix must be over the vocabulary's terms, in the same order"
            )
        self.similarity_matrix = similarity_matrix
        self.hybrid = hybrid_settings(hybrid)
        if unseen is not None and not isinstance(unseen, UnseenTerms):
            raise ValueError(f"unseen must be UnseenTerms or None, got {unseen!r}")
        self.unseen = unseen
        self._model_id: str | None = None

    # -- text -> Wx -----------------------------------------------------------------------------

    @property
    def terms(self) -> list[str]:
        """The vocabulary terms; ``terms[i]`` labels column ``i`` of every vector and of S."""
        return self.vocabulary.terms

    def _weighting(self, role: Role) -> TermWeighting:
        if role == "query":
            return self.query_weighting
        if role == "document":
            return self.document_weighting
        raise ValueError(f"role must be 'query' or 'document', got {role!r}")

    def counts(self, texts: Iterable[str], tokens: TokenCounts | None = None) -> sp.csr_matrix:
        """Return the term counts of ``texts``, one row per text (int64 CSR, sorted indices).

        Equal to ``vocabulary.to_counts(tokenizer.tokenize_many(texts))``, faster: one dictionary
        lookup per token (:class:`~es_scm.model.text.TermCounter`). ``tokens``, if given, is
        added the number of tokens that are terms and of those that are unknown
        (:class:`TokenCounts`), at no extra cost.
        """
        return self._counter.counts(texts, tokens)

    def vectorize_many(
        self,
        texts: Iterable[str],
        role: Role = "document",
        tokens: TokenCounts | None = None,
    ) -> sp.csr_matrix:
        """Return the weighted term vectors ``Wx`` of ``texts`` as rows.

        Parameters
        ----------
        texts : iterable of str
            May be a one-shot iterator.
        role : {"query", "document"}, default="document"
            Which weighting to apply.
        tokens : TokenCounts, optional
            Added the texts' tokens and unknown tokens (see :meth:`counts`).

        Returns
        -------
        scipy.sparse.csr_matrix of float64, shape (n_texts, n_terms)
        """
        weighting = self._weighting(role)
        return weighting.transform(
            self.counts(texts, tokens), self.vocabulary, global_weights=self.global_weights(role)
        )

    def global_weights(self, role: Role = "query") -> np.ndarray:
        """The idf factor of every vocabulary term in ``role``'s weighting, computed once
        (:meth:`~es_scm.model.text.TermWeighting.global_weights`; the query signals read
        the query's, :func:`es_scm.fusion.signals.query_signals`)."""
        if role not in self._global_weights:
            weighting = self._weighting(role)
            self._global_weights[role] = weighting.global_weights(self.vocabulary)
        return self._global_weights[role]

    def vectorize(self, text: str, role: Role = "query") -> sp.csr_matrix:
        """Return the weighted term vector ``Wx`` of one text.

        Parameters
        ----------
        text : str
        role : {"query", "document"}, default="query"

        Returns
        -------
        scipy.sparse.csr_matrix of float64, shape (1, n_terms)
            Terms outside the vocabulary are ignored; a text without known terms gives an empty
            row.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self.vectorize_many([text], role=role)

    def get_config(self) -> dict[str, Any]:
        """Return the JSON-serializable configuration (tokenizer and weightings)."""
        return {
            "tokenizer": self.tokenizer.get_config(),
            "document_weighting": self.document_weighting.get_config(),
            "query_weighting": self.query_weighting.get_config(),
        }

    @classmethod
    def build(
        cls,
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
        synonyms: Any = None,
        nonzero_limit: int | None = SIMILARITY_DEFAULTS.nonzero_limit,
        threshold: float | None = SIMILARITY_DEFAULTS.threshold,
        exponent: float | None = SIMILARITY_DEFAULTS.exponent,
        symmetric: bool = SIMILARITY_DEFAULTS.symmetric,
        dominant: bool = SIMILARITY_DEFAULTS.dominant,
        neighbors: str = SIMILARITY_DEFAULTS.neighbors,
        column_order: str = SIMILARITY_DEFAULTS.column_order,
        dtype: np.dtype | type = DTYPE,
        batch_size: int | None = None,
        n_jobs: int | None = None,
        unseen_limit: int = UNSEEN_LIMIT,
    ) -> SoftCosineModel:
        """Fit the vocabulary in one pass over ``texts`` and build S over its terms.

        Parameters
        ----------
        texts : iterable of str
            The corpus; may be a one-shot iterator (it is read exactly once).
        embeddings : WordEmbeddings, gensim KeyedVectors, str, list of pairs, optional
            The source of S (:mod:`es_scm.model.similarity_source`), checked before the corpus
            is read: word vectors for :meth:`TermSimilarityMatrix.from_embeddings`;
            ``"train[:word2vec|fasttext]"`` or an ``EmbeddingTraining`` trains them on ``texts``
            (or on its background corpus) first, deterministically and cached;
            ``"encoder[:NAME_OR_FOLDER]"``, an ``EncoderVectors`` or a ``SentenceEncoder``
            encodes the terms with a sentence encoder (:mod:`es_scm.similarity.encoded`,
            cached); ``"auto"`` chooses by the corpus's size and the installed extras;
            ``(weight, embeddings)`` pairs combine their matrices, ``(weight, embeddings,
            options)`` triples with the part's own ``SourceOptions``. None (and no
            ``similarity``, ``levenshtein`` or ``synonyms``): S = I, the plain cosine.
        tokenizer : Tokenizer, optional
            Defaults to ``Tokenizer()``.
        min_df, max_df, max_terms
            Vocabulary pruning; see :class:`Vocabulary`.
        document_weighting, query_weighting : TermWeighting, str, dict or None
            See the class; the default is :data:`es_scm.options.defaults.DEFAULT_WEIGHTING` on both
            sides.
        similarity : TermSimilarityMatrix or callable, optional
            A ready S (over the vocabulary's terms, or a superset that is then restricted to
            them), or a function ``terms -> TermSimilarityMatrix`` (e.g. a thesaurus with
            :meth:`TermSimilarityMatrix.from_pairs`). Excludes ``embeddings`` and ``levenshtein``.
        levenshtein : bool, float or LevenshteinOptions, default=False
            Use edit-distance similarity (:meth:`TermSimilarityMatrix.from_levenshtein`). Alone,
            it is S; with ``embeddings``, ``True`` averages the two matrices and a float λ in
            (0, 1) gives ``λ·S_levenshtein + (1 − λ)·S_embeddings`` off the unit diagonal.
        synonyms : path, list of paths or Synonyms, optional
            Curated synonym files (Solr/Elasticsearch rules, or a weighted ``.tsv`` of pairs;
            :mod:`es_scm.similarity.synonyms`), their entries mapped to terms by ``tokenizer``:
            alone they are S; with other sources S is ``w·S_synonyms + (1 − w)·S_others`` off
            the unit diagonal, ``w`` the ``weight`` of ``Synonyms`` (default
            :data:`es_scm.options.defaults.SYNONYM_DEFAULTS`).
        nonzero_limit, threshold, exponent, symmetric, dominant, neighbors, column_order
            How S is built (:class:`~es_scm.options.SimilarityOptions`, checked together), with
            the defaults of :data:`es_scm.options.defaults.SIMILARITY_DEFAULTS`;
            ``neighbors="gensim"`` gives gensim's matrix bit for bit, ``column_order="id"`` fills
            S's columns by term id instead of rarest term first. ``threshold`` and ``exponent``
            None: each source of vectors its own (:data:`es_scm.options.defaults.EMBEDDING_SOURCE`,
            :data:`es_scm.options.defaults.ENCODER_DEFAULTS`); given, they apply to every source of
            vectors except a combined part that has its own.
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
            embeddings, similarity, levenshtein, options, dtype, batch_size, unseen_limit, synonyms
        )
        vocabulary = Vocabulary(min_df=min_df, max_df=max_df, max_terms=max_terms)
        tokenizer, vocabulary, matrix, unseen = fit_parts(
            texts, recipe, tokenizer=tokenizer, vocabulary=vocabulary, n_jobs=n_jobs
        )
        # embeddings="auto" may come with the fusion chosen for the S it chose
        hybrid = matrix.build_info.get("auto", {}).get("hybrid")
        return cls(
            tokenizer,
            vocabulary,
            matrix,
            document_weighting,
            query_weighting,
            hybrid=hybrid,
            unseen=unseen,
        )

    # -- scores ---------------------------------------------------------------------------------

    def query_vector(self, text: str) -> QueryVector:
        """The query as the SCM uses it: x = W(q), x' and its soft norm, computed once.

        Query words outside the vocabulary that :attr:`unseen` knows join x' and the norm
        (:func:`es_scm.similarity.TermSimilarityMatrix.query_vector`); others are ignored.
        """
        weights = self.vectorize(text, role="query")
        words = []
        if self.unseen is not None:
            args = (self.tokenizer, self.vocabulary, self.query_weighting, self.unseen)
            words = unseen_words(text, *args)
        return self.similarity_matrix.query_vector(weights, words)

    def similarity(
        self,
        text_a: str,
        text_b: str,
        roles: tuple[Role, Role] = ("query", "document"),
    ) -> float:
        """Return the exact soft cosine measure between two texts.

        Parameters
        ----------
        text_a, text_b : str
        roles : pair of {"query", "document"}, default=("query", "document")
            The weighting of each text. With the default weightings both roles are weighted the
            same, so the measure is symmetric for symmetric S.

        Returns
        -------
        float
            SCM(Wx, Wy) in [-1, 1] (in [0, 1] for non-negative S); 0.0 when either text has no
            vocabulary term.
        """
        query = self._first_side(text_a, roles[0])
        y = self.vectorize(text_b, role=roles[1])
        return float(query.scores(self.similarity_matrix.normalize(y))[0])

    def _first_side(self, text: str, role: Role) -> QueryVector:
        """x of an SCM as a query value: a query's (with its words outside the vocabulary) or a
        document's; ValueError if its SCM is undefined."""
        if role == "query":
            return self.query_vector(text).require_norm()
        return self.similarity_matrix.query_vector(self.vectorize(text, role=role)).require_norm()

    def explain(
        self,
        text_a: str,
        text_b: str,
        roles: tuple[Role, Role] = ("query", "document"),
        top: int | None = None,
    ) -> Explanation:
        r"""Why two texts are similar: :meth:`similarity` as a sum over pairs of their terms.

        .. math:: \operatorname{SCM}(x, y) = \sum_{i, j} \frac{x_i\, s_{ij}\, y_j}
                  {\sqrt{x^T S x}\,\sqrt{y^T S y}}

        over the terms i of ``text_a`` and j of ``text_b`` with :math:`s_{ij} \ne 0`
        (:mod:`es_scm.model.explanation`).

        Parameters
        ----------
        text_a, text_b : str
            The "query" side x and the "document" side y of the pairs.
        roles : pair of {"query", "document"}, default=("query", "document")
            The weighting of each text, as in :meth:`similarity`.
        top : int or None, default=None
            Keep the ``top`` largest pairs only (the rest are summed up in ``omitted``).

        Returns
        -------
        Explanation
            ``score`` equals :meth:`similarity`; the contributions of all pairs sum to it within
            1e-9 (to ``total``, the SCM before clipping to [-1, 1]). Empty, with score 0, when
            either text has no vocabulary term.
        """
        query = self._first_side(text_a, roles[0])
        y = self.vectorize(text_b, role=roles[1])
        return explain_query(self.similarity_matrix, query, y, top)

    # -- identity and persistence ---------------------------------------------------------------

    @property
    def model_id(self) -> str:
        """SHA-256 of everything that affects scores (see :mod:`es_scm.model.persistence`)."""
        if self._model_id is None:
            self._model_id = persistence.content_hash(
                self.get_config(),
                (self.document_weighting, self.query_weighting),
                self.vocabulary,
                self.similarity_matrix,
                self.unseen,
            )
        return self._model_id

    def describe(self) -> dict[str, Any]:
        """What the model is: sizes, weightings as specs, and how S was built (for people)."""
        return {
            "model_id": self.model_id,
            "terms": len(self.terms),
            "documents": self.vocabulary.num_documents,
            "similarity_nnz": self.similarity_matrix.nnz,
            "document_weighting": self.document_weighting.to_spec(),
            "query_weighting": self.query_weighting.to_spec(),
            "similarity": self.similarity_matrix.build_info,
        }

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the model to ``directory`` (created if missing) and return its path.

        A model already there is replaced in one step: the new files are written and flushed
        beside it first, so a save that is killed leaves the previous model or the new one
        (:mod:`es_scm.model.saving`). A user tokenizer callable is saved by qualified name
        only; :meth:`load` then needs it again.

        Raises
        ------
        ValueError
            ``directory`` holds other files than a model's (nothing is written).
        """
        path = Path(directory)
        persistence.write_model(path, self)
        return path

    @classmethod
    def load(
        cls,
        directory: str | os.PathLike[str],
        *,
        tokenizer: Callable[[str], Iterable[str]] | None = None,
    ) -> SoftCosineModel:
        """Read a model written by :meth:`save`.

        Parameters
        ----------
        directory : path
        tokenizer : callable, optional
            The user tokenizer callable, required iff the model was built with one.

        Raises
        ------
        ValueError
            If the files are not an es-scm model, are damaged, or their content no longer
            hashes to the saved ``model_id``.
        """
        return persistence.read_model(Path(directory), cls, tokenizer)

    def __repr__(self) -> str:
        return (
            f"SoftCosineModel({len(self.vocabulary)} terms, "
            f"document_weighting={self.document_weighting!r}, "
            f"query_weighting={self.query_weighting!r}, model_id={self.model_id[:12]!r})"
        )
