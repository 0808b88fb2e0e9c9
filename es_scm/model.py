"""The soft cosine model: tokenizer + vocabulary + term weighting + term similarity matrix S.

A :class:`SoftCosineModel` turns text into the weighted term vectors ``Wx`` of the soft vector
space model (Novotný, CIKM '18, Definition 3.1) and measures their soft cosine

    SCM(x, y) = (Wx)ᵀ S (Wy) / (√((Wx)ᵀ S (Wx)) · √((Wy)ᵀ S (Wy)))

(the remark to Lemma 3.3). Vectors are rows (``(1, n_terms)`` CSR); a batch of texts is a
``(n_texts, n_terms)`` CSR matrix. Documents and queries may be weighted differently (e.g. BM25
documents and raw-tf queries), so every vectorizing method takes a ``role``.

Everything that affects a score is saved as one bundle by :meth:`SoftCosineModel.save`::

    model.json        tokenizer config, document and query weighting, model_id
    vocabulary.json   terms, document frequencies, corpus statistics
    similarity.npz    S, via TermSimilarityMatrix.save

and :attr:`SoftCosineModel.model_id` is a SHA-256 content hash over exactly those things (the
canonical JSON of the tokenizer and weighting configs; the vocabulary's terms, and its document
frequencies and N when a weighting uses idf, and its token count when one is BM25; S's shape,
dtype, data, indices and indptr in canonical CSC form). It changes iff something that can
change a score changes, so an Elasticsearch index can record the model it was built with.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from es_scm.termsim import TermSimilarityMatrix
from es_scm.text import Tokenizer
from es_scm.vocabulary import Vocabulary
from es_scm.weighting import TermWeighting

__all__ = ["SoftCosineModel"]

Role = Literal["query", "document"]
WeightingLike = TermWeighting | Mapping[str, Any] | None
SimilarityLike = TermSimilarityMatrix | Callable[[list[str]], TermSimilarityMatrix] | None

_FORMAT = "es-scm-model"
_VERSION = 1
_ID_SCHEME = "es-scm-model-id/1"
_CONFIG_FILE = "model.json"
_VOCABULARY_FILE = "vocabulary.json"
_SIMILARITY_FILE = "similarity.npz"


def default_weighting() -> TermWeighting:
    """The default weighting of both documents and queries: 1 + ln tf times ln(1 + N/df)."""
    return TermWeighting(tf="log", idf="smooth")


class SoftCosineModel:
    """Text → weighted term vectors → exact soft cosine measure.

    Usually made with :meth:`build` or :meth:`load`; the constructor only bundles fitted parts.

    Parameters
    ----------
    tokenizer : Tokenizer
        Turns text into terms, for indexing and querying alike.
    vocabulary : Vocabulary
        A fitted vocabulary; its terms index the columns of every vector.
    similarity_matrix : TermSimilarityMatrix
        S, over exactly ``vocabulary.terms`` in the same order.
    document_weighting, query_weighting : TermWeighting, dict or None, default=None
        W for documents and for queries (a dict is a :meth:`TermWeighting.get_config`); ``None``
        is :func:`default_weighting`.

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
    ) -> None:
        if not isinstance(tokenizer, Tokenizer):
            raise ValueError(f"tokenizer must be a Tokenizer, got {tokenizer!r}")
        if not isinstance(vocabulary, Vocabulary):
            raise ValueError(f"vocabulary must be a fitted Vocabulary, got {vocabulary!r}")
        self.tokenizer = tokenizer
        self.vocabulary = vocabulary
        self.similarity_matrix = _check_similarity(similarity_matrix, vocabulary)
        self.document_weighting = _as_weighting("document_weighting", document_weighting)
        self.query_weighting = _as_weighting("query_weighting", query_weighting)
        self._model_id: str | None = None
        self._lookup: dict[str, int] | None = None

    # -- building -------------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        texts: Iterable[str],
        embeddings: Any = None,
        *,
        tokenizer: Tokenizer | None = None,
        min_df: int | float = 1,
        max_df: int | float = 1.0,
        max_terms: int | None = None,
        document_weighting: WeightingLike = None,
        query_weighting: WeightingLike = None,
        similarity: SimilarityLike = None,
        nonzero_limit: int = 100,
        threshold: float = 0.0,
        exponent: float = 2.0,
        symmetric: bool = True,
        dominant: bool = False,
        neighbors: str = "terms",
        levenshtein: bool | float = False,
        similarity_options: Mapping[str, Any] | None = None,
    ) -> SoftCosineModel:
        """Fit the vocabulary in one pass over ``texts`` and build S over its terms.

        Parameters
        ----------
        texts : iterable of str
            The corpus; may be a one-shot iterator (it is read exactly once).
        embeddings : WordEmbeddings or other embeddings, optional
            Passed to :meth:`TermSimilarityMatrix.from_embeddings`. Without embeddings (and
            without ``similarity`` or ``levenshtein``), S is the identity and the SCM is the
            plain cosine similarity.
        tokenizer : Tokenizer, optional
            Defaults to ``Tokenizer()``.
        min_df, max_df, max_terms
            Vocabulary pruning; see :class:`Vocabulary`.
        document_weighting, query_weighting : TermWeighting, dict or None
            ``None`` is :func:`default_weighting` (1 + ln tf, ln(1 + N/df)) on both sides.
        similarity : TermSimilarityMatrix or callable, optional
            A ready S (over the vocabulary's terms, or a superset that is then restricted to
            them), or a function ``terms -> TermSimilarityMatrix`` (e.g. a thesaurus with
            :meth:`TermSimilarityMatrix.from_pairs`). Excludes ``embeddings`` and ``levenshtein``.
        nonzero_limit, threshold, exponent, symmetric, dominant
            Options of :meth:`TermSimilarityMatrix.from_embeddings` (``nonzero_limit``,
            ``symmetric`` and ``dominant`` also of :meth:`TermSimilarityMatrix.from_levenshtein`).
            Columns are visited rarest term first (the vocabulary's document frequencies).
        neighbors : {"terms", "vocabulary"}, default="terms"
            Where :meth:`TermSimilarityMatrix.from_embeddings` looks for a term's neighbours:
            among the vocabulary's terms only (cheaper; every neighbour is usable), or in the
            whole embedding vocabulary keeping those among the terms (gensim's mode).
        levenshtein : bool or float, default=False
            Use edit-distance similarity (:meth:`TermSimilarityMatrix.from_levenshtein`). Alone,
            it is S; with ``embeddings``, ``True`` averages the two matrices and a float λ in
            (0, 1) gives ``λ·S_levenshtein + (1 − λ)·S_embeddings`` off the unit diagonal
            (:meth:`TermSimilarityMatrix.combine`).
        similarity_options : dict, optional
            Further keyword arguments for :meth:`TermSimilarityMatrix.from_embeddings`, which
            override the ones above (e.g. ``{"dtype": np.float64}``).

        Returns
        -------
        SoftCosineModel
        """
        tokenizer = Tokenizer() if tokenizer is None else tokenizer
        vocabulary = Vocabulary(min_df=min_df, max_df=max_df, max_terms=max_terms)
        vocabulary.fit(tokenizer.tokenize_many(texts))
        shared_options = {
            "nonzero_limit": nonzero_limit,
            "symmetric": symmetric,
            "dominant": dominant,
            "document_frequencies": vocabulary.document_frequencies,
        }
        embedding_options = {
            **shared_options,
            "threshold": threshold,
            "exponent": exponent,
            "neighbors": neighbors,
            **(similarity_options or {}),
        }
        matrix = _build_similarity(
            vocabulary.terms, embeddings, similarity, levenshtein, shared_options, embedding_options
        )
        return cls(tokenizer, vocabulary, matrix, document_weighting, query_weighting)

    # -- vectors --------------------------------------------------------------------------------

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

    def counts(self, texts: Iterable[str]) -> sp.csr_matrix:
        """Return the term counts of ``texts``, one row per text (int64 CSR, sorted indices).

        Equal to ``vocabulary.to_counts(tokenizer.tokenize_many(texts))``, faster: the raw tokens
        are looked up in a table of the vocabulary terms that the tokenizer keeps, so the stop
        words and short tokens drop out with the unknown ones in one dictionary lookup.
        """
        if isinstance(texts, str):
            raise TypeError("texts must be an iterable of str, not a str; use [text]")
        lookup = self._term_lookup().get
        split = self.tokenizer.split
        indptr, indices = [0], []
        for text in texts:
            indices.extend([i for i in map(lookup, split(text)) if i is not None])
            indptr.append(len(indices))
        counts = sp.csr_matrix(
            (np.ones(len(indices), dtype=np.int64), indices, indptr),
            shape=(len(indptr) - 1, len(self.terms)),
        )
        counts.sum_duplicates()  # sorts the indices of every row and adds up the repeats
        return counts

    def _term_lookup(self) -> dict[str, int]:
        if self._lookup is None:
            keeps = self.tokenizer.keeps
            self._lookup = {t: i for t, i in self.vocabulary.term_to_id.items() if keeps(t)}
        return self._lookup

    def vectorize_many(self, texts: Iterable[str], role: Role = "document") -> sp.csr_matrix:
        """Return the weighted term vectors ``Wx`` of ``texts`` as rows.

        Parameters
        ----------
        texts : iterable of str
            May be a one-shot iterator.
        role : {"query", "document"}, default="document"
            Which weighting to apply.

        Returns
        -------
        scipy.sparse.csr_matrix of float64, shape (n_texts, n_terms)
        """
        weighting = self._weighting(role)
        return weighting.transform(self.counts(texts), self.vocabulary)

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
        x = self.vectorize(text_a, role=roles[0])
        y = self.vectorize(text_b, role=roles[1])
        return float(self.similarity_matrix.inner_product(x, y, normalized=(True, True)))

    # -- identity and persistence ---------------------------------------------------------------

    def get_config(self) -> dict[str, Any]:
        """Return the JSON-serializable configuration (tokenizer and weightings)."""
        return {
            "tokenizer": self.tokenizer.get_config(),
            "document_weighting": self.document_weighting.get_config(),
            "query_weighting": self.query_weighting.get_config(),
        }

    @property
    def model_id(self) -> str:
        """SHA-256 hex digest of everything that affects scores (see the module docstring)."""
        if self._model_id is None:
            self._model_id = _content_hash(self)
        return self._model_id

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the model to ``directory`` (created if missing) and return its path.

        A user tokenizer callable is saved by qualified name only; :meth:`load` then needs it
        again.
        """
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        config = {
            "format": _FORMAT,
            "version": _VERSION,
            **self.get_config(),
            "model_id": self.model_id,
        }
        (path / _CONFIG_FILE).write_text(
            json.dumps(config, ensure_ascii=False, indent=2, sort_keys=True) + "\n",
            encoding="utf-8",
        )
        self.vocabulary.save(path / _VOCABULARY_FILE)
        self.similarity_matrix.save(path / _SIMILARITY_FILE)
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
            If the files are not an es-scm model, or their content no longer hashes to the
            saved ``model_id``.
        """
        path = Path(directory)
        config = json.loads((path / _CONFIG_FILE).read_text(encoding="utf-8"))
        if config.get("format") != _FORMAT:
            raise ValueError(f"{path / _CONFIG_FILE} is not an es-scm model")
        if config.get("version") != _VERSION:
            raise ValueError(f"unsupported es-scm model version {config.get('version')!r}")
        model = cls(
            Tokenizer.from_config(config["tokenizer"], tokenizer=tokenizer),
            Vocabulary.load(path / _VOCABULARY_FILE),
            TermSimilarityMatrix.load(path / _SIMILARITY_FILE),
            TermWeighting.from_config(config["document_weighting"]),
            TermWeighting.from_config(config["query_weighting"]),
        )
        if model.model_id != config.get("model_id"):
            raise ValueError(
                f"the model in {path} hashes to {model.model_id}, not to its saved model_id "
                f"{config.get('model_id')!r}: its files were changed or mixed"
            )
        return model

    def __repr__(self) -> str:
        return (
            f"SoftCosineModel({len(self.vocabulary)} terms, "
            f"document_weighting={self.document_weighting!r}, "
            f"query_weighting={self.query_weighting!r}, model_id={self.model_id[:12]!r})"
        )


# -- helpers ------------------------------------------------------------------------------------


def _as_weighting(name: str, weighting: WeightingLike) -> TermWeighting:
    if weighting is None:
        return default_weighting()
    if isinstance(weighting, TermWeighting):
        return weighting
    if isinstance(weighting, Mapping):
        return TermWeighting.from_config(dict(weighting))
    raise ValueError(f"{name} must be a TermWeighting, a dict or None, got {weighting!r}")


def _restrict(matrix: TermSimilarityMatrix, terms: list[str]) -> TermSimilarityMatrix:
    position = {term: index for index, term in enumerate(matrix.terms)}
    missing = [term for term in terms if term not in position]
    if missing:
        raise ValueError(
            f"the term similarity matrix lacks {len(missing)} vocabulary terms, e.g. {missing[0]!r}"
        )
    rows = np.fromiter((position[term] for term in terms), dtype=np.int64, count=len(terms))
    sub = sp.csc_matrix(matrix.matrix)[rows][:, rows]
    return TermSimilarityMatrix(sp.csc_matrix(sub), list(terms))


def _check_similarity(matrix: Any, vocabulary: Vocabulary) -> TermSimilarityMatrix:
    if not isinstance(matrix, TermSimilarityMatrix):
        raise ValueError(f"similarity_matrix must be a TermSimilarityMatrix, got {matrix!r}")
    if list(matrix.terms) != vocabulary.terms:
        raise ValueError(
            "the term similarity matrix must be over the vocabulary's terms, in the same order"
        )
    return matrix


def _build_similarity(
    terms: list[str],
    embeddings: Any,
    similarity: SimilarityLike,
    levenshtein: bool | float,
    shared_options: dict[str, Any],
    embedding_options: dict[str, Any],
) -> TermSimilarityMatrix:
    if similarity is not None:
        if embeddings is not None or levenshtein:
            raise ValueError("pass either similarity or embeddings/levenshtein, not both")
        matrix = similarity if isinstance(similarity, TermSimilarityMatrix) else similarity(terms)
        if not isinstance(matrix, TermSimilarityMatrix):
            raise ValueError(f"similarity must give a TermSimilarityMatrix, got {matrix!r}")
        return matrix if list(matrix.terms) == terms else _restrict(matrix, terms)
    weight = _levenshtein_weight(levenshtein)
    if embeddings is None and weight == 0.0:
        return TermSimilarityMatrix.identity(terms)
    edit = None
    if weight > 0.0:
        edit = TermSimilarityMatrix.from_levenshtein(terms, **shared_options)
    if embeddings is None:
        assert edit is not None
        return edit
    semantic = TermSimilarityMatrix.from_embeddings(terms, embeddings, **embedding_options)
    if edit is None:
        return semantic
    weight = 0.5 if levenshtein is True else weight
    return TermSimilarityMatrix.combine([(1.0 - weight, semantic), (weight, edit)])


def _levenshtein_weight(levenshtein: bool | float) -> float:
    if isinstance(levenshtein, bool):
        return 1.0 if levenshtein else 0.0
    if isinstance(levenshtein, (int, float)) and 0.0 < levenshtein < 1.0:
        return float(levenshtein)
    raise ValueError(f"levenshtein must be a bool or a float in (0, 1), got {levenshtein!r}")


def _canonical_json(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8")


def _update_with_array(digest: Any, array: np.ndarray, dtype: np.dtype | None = None) -> None:
    array = np.asarray(array, dtype=dtype or array.dtype)
    little_endian = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    digest.update(str(little_endian.dtype.str).encode("ascii"))
    digest.update(len(little_endian).to_bytes(8, "little"))
    digest.update(little_endian.tobytes())


def _canonical_csc(matrix: Any) -> sp.csc_matrix:
    canonical = sp.csc_matrix(matrix, copy=True)
    canonical.sum_duplicates()
    canonical.eliminate_zeros()
    canonical.sort_indices()
    return canonical


def _statistics_used(model: SoftCosineModel) -> dict[str, Any]:
    weightings = (model.document_weighting, model.query_weighting)
    uses_idf = any(w.scheme == "bm25" or w.idf != "none" for w in weightings)
    uses_length = any(w.scheme == "bm25" for w in weightings)
    vocabulary = model.vocabulary
    statistics: dict[str, Any] = {"terms": vocabulary.terms}
    if uses_idf:
        statistics["num_documents"] = vocabulary.num_documents
        statistics["document_frequencies"] = vocabulary.document_frequencies.tolist()
    if uses_length:
        statistics["num_tokens"] = vocabulary.num_tokens
    return statistics


def _content_hash(model: SoftCosineModel) -> str:
    digest = hashlib.sha256()
    digest.update(_ID_SCHEME.encode("ascii"))
    digest.update(_canonical_json({**model.get_config(), **_statistics_used(model)}))
    matrix = _canonical_csc(model.similarity_matrix.matrix)
    digest.update(_canonical_json(list(matrix.shape)))
    _update_with_array(digest, matrix.data)
    _update_with_array(digest, matrix.indices, np.dtype(np.int64))
    _update_with_array(digest, matrix.indptr, np.dtype(np.int64))
    return digest.hexdigest()
