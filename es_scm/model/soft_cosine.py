"""The soft cosine model: tokenizer + vocabulary + term weighting + term similarity matrix S.

A :class:`SoftCosineModel` turns text into the weighted term vectors ``Wx`` of the soft vector
space model (Novotný, CIKM '18, Definition 3.1) and measures their soft cosine

    SCM(x, y) = (Wx)ᵀ S (Wy) / (√((Wx)ᵀ S (Wx)) · √((Wy)ᵀ S (Wy)))

(the remark to Lemma 3.3). It is a :class:`~es_scm.model.vectorizer.TermVectorizer` (text →
``Wx``, documents and queries weighted apart, vectors as rows) with S, and the words outside the
vocabulary that a query may use.

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

from es_scm.fusion import hybrid_settings
from es_scm.model import persistence
from es_scm.model.explanation import Explanation, explain_query
from es_scm.model.fitting import ModelFitting
from es_scm.model.queries import unseen_words
from es_scm.model.text import Tokenizer
from es_scm.model.token_counts import TokenCounts
from es_scm.model.vectorizer import Role, TermVectorizer, WeightingLike
from es_scm.model.vocabulary import Vocabulary
from es_scm.similarity import TermSimilarityMatrix
from es_scm.similarity.scoring import QueryVector, query_vector
from es_scm.similarity.unseen import UnseenTerms

__all__ = ["SoftCosineModel", "TokenCounts"]

logger = logging.getLogger(__name__)


class SoftCosineModel(TermVectorizer, ModelFitting):
    """Text → weighted term vectors → exact soft cosine measure.

    Usually made with :meth:`build` (inherited from :class:`~es_scm.model.fitting.ModelFitting`)
    or :meth:`load`; the constructor only bundles fitted parts. Texts become vectors as in
    :class:`~es_scm.model.vectorizer.TermVectorizer` (:meth:`vectorize`, :meth:`vectorize_many`,
    :meth:`counts`), which it extends with S.

    Parameters
    ----------
    tokenizer, vocabulary, document_weighting, query_weighting
        The text side, as in :class:`~es_scm.model.vectorizer.TermVectorizer`: a Tokenizer, a
        fitted Vocabulary, and W for documents and for queries (a weighting, a spec such as
        ``"log-smooth"`` or ``"bm25"``, a config dict, or None for the defaults).
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
        super().__init__(tokenizer, vocabulary, document_weighting, query_weighting)
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

    # -- scores ---------------------------------------------------------------------------------

    def query_vector(self, text: str) -> QueryVector:
        """The query as the SCM uses it: x = W(q), x' and its soft norm, computed once.

        Query words outside the vocabulary that :attr:`unseen` knows join x' and the norm
        (:func:`es_scm.similarity.scoring.query_vector`); others are ignored.
        """
        weights = self.vectorize(text, role="query")
        words = []
        if self.unseen is not None:
            args = (self.tokenizer, self.vocabulary, self.query_weighting, self.unseen)
            words = unseen_words(text, *args)
        return query_vector(self.similarity_matrix, weights, words)

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
        return query_vector(self.similarity_matrix, self.vectorize(text, role=role)).require_norm()

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
