r"""The queries es-scm sends: text → x = W(q) → x' = SᵀWx → the expanded query and its error
bound, and BM25's ``match`` (:func:`bm25_query`).

Pure Python, no I/O (the searcher sends what this builds). The query text becomes x = W(q) with
the model's query weighting and is expanded to x' = SᵀWx (Theorem 4.1) by the term-similarity
layer (:meth:`~es_scm.similarity.TermSimilarityMatrix.expand`), which reads only the O(mC) rows of
S of the m query terms. Its positive entries are sent as a ``sparse_vector`` query (or,
equivalently, a ``bool`` of ``term`` queries each boosted by x'_j) on the ``sparse_vector``
field, so Elasticsearch fetches the postings of the related terms and scores every matching
document by the sparse dot product s_d = Σ_j x'_j · q(y'_j), where y' is the stored normalized
document vector and q keeps the 9 most significant bits of a float32.

Document-side expansion (an index made with ``expansion="documents"``)
    The index holds Sy' too (:data:`~es_scm.index.schema.EXPANDED_FIELD`), and the query
    sends only the positive entries of its own Wx on that field: s_d = Σ_j (Wx)_j · q((Sy')_j),
    again an estimate of the same e_d = (Wx)ᵀSy' = x'ᵀy', with m clauses instead of O(mC).

How far s_d may be from the exact e_d, and the expansion terms that the clause limit leaves out,
are bounded by :meth:`ExpandedQuery.unseen_upper_bound`; why that makes exact search exact is
argued once, in :mod:`es_scm.search.exact`.

The query text
    Every search method reads the text the same way (:func:`query_text`): at most
    ``max_query_words`` words, and a lone surrogate — what Python makes of bytes that are not
    UTF-8, e.g. in a command-line argument — replaced by U+FFFD, as a UTF-8 decoder would
    replace the bytes: no word changes (neither is a letter), and the text can be sent to
    Elasticsearch (BM25's ``match``) as JSON.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import scipy.sparse as sp

from es_scm.index.schema import EXPANDED_FIELD, FEATURE_VALUE_ERROR, TEXT_FIELD, VECTOR_FIELD
from es_scm.options.validation import NON_NEGATIVE_INT, check
from es_scm.similarity.scm import QueryVector, stored_rows

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = [
    "FLOAT32_UNIT_ROUNDOFF",
    "ExpandedQuery",
    "Pruning",
    "QueryAccount",
    "QueryTooLongError",
    "QueryType",
    "bm25_query",
    "clause_budget",
    "clause_count",
    "expand_query",
    "query_text",
    "restricted",
]

QueryType = Literal["bool", "sparse_vector", "rank_feature"]
FLOAT32_UNIT_ROUNDOFF = 2.0**-24
# A word of a query, as its length is bounded: a run of letters and digits (the tokenizer's default
# pattern), stop words included, since an Elasticsearch analyzer keeps them.
_WORD = re.compile(r"[^\W_]+")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NO_IDS = np.zeros(0, dtype=np.int64)
_NO_VALUES = np.zeros(0, dtype=np.float64)


@dataclass(frozen=True)
class QueryAccount:
    """What a search reports of its query: its terms (``query_terms``: the vocabulary's and the
    words outside it), its expansion's (``expansion_terms``), those the clause limit left out
    (``pruned_terms``), and the ``notes`` that say what a reader should know."""

    query_terms: int = 0
    expansion_terms: int = 0
    pruned_terms: int = 0
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ExpandedQuery(QueryVector):
    """A query as search uses it: its value (x = W(q), x' = Sᵀx and ‖x‖_S, the fields of
    :class:`~es_scm.similarity.scm.QueryVector`, Theorem 4.1) with the clauses sent and the
    bound of what they leave out.

    The terms sent to Elasticsearch (the expansion's, or the query's own for an index with
    document-side expansion, on ``field``) are ``clause_terms`` with the weights
    ``clause_weights`` (largest first); with document-side expansion, the expansion of the query's
    words outside the vocabulary, Eᵀx_W, goes to the y' field as ``extra_terms`` with
    ``extra_weights``. ``pruned_terms`` more were left out — by the cluster's clause limit
    (``limited_terms`` of them) or by a first phase's pruning (:class:`Pruning`) — whose
    contribution to any document's x'ᵀy' is at most ``pruned_mass``.
    """

    clause_terms: np.ndarray
    clause_weights: np.ndarray
    pruned_terms: int = 0
    pruned_mass: float = 0.0
    limited_terms: int = 0
    has_negative: bool = False
    field: str = VECTOR_FIELD
    extra_terms: np.ndarray = dataclasses.field(default_factory=lambda: _NO_IDS)
    extra_weights: np.ndarray = dataclasses.field(default_factory=lambda: _NO_VALUES)

    @property
    def clause_count(self) -> int:
        """Every term sent, on either field."""
        return len(self.clause_terms) + len(self.extra_terms)

    @property
    def clauses(self) -> list[tuple[int, float]]:
        """``(term id, weight)`` of every term sent on ``field``."""
        return list(zip(self.clause_terms.tolist(), self.clause_weights.tolist(), strict=True))

    def _parts(self) -> list[tuple[str, list[tuple[int, float]]]]:
        own = zip(self.clause_terms.tolist(), self.clause_weights.tolist(), strict=True)
        extra = list(zip(self.extra_terms.tolist(), self.extra_weights.tolist(), strict=True))
        return [(self.field, list(own))] + ([(VECTOR_FIELD, extra)] if extra else [])

    def account(self, clause_limit: int) -> QueryAccount:
        """The query's terms, its expansion's and those left out, with the notes that say so."""
        expansion_terms = self.clause_count + self.pruned_terms
        notes = []
        if self.empty:
            notes.append("the query has no vocabulary terms (empty, stop words or unknown)")
        if self.limited_terms:
            notes.append(
                f"the expansion had {expansion_terms} terms; the {self.limited_terms} "
                f"lowest-weighted were left out (cluster limit {clause_limit} clauses)"
            )
        if self.has_negative:
            notes.append("negative similarities or weights: native retrieval is approximate")
        query_terms = self.weights.nnz + len(self.unseen)
        return QueryAccount(query_terms, expansion_terms, self.pruned_terms, tuple(notes))

    def es_query(
        self,
        query_type: QueryType = "sparse_vector",
        filter: Sequence[Mapping[str, Any]] = (),
    ) -> dict[str, Any]:
        """The expanded query, in one of three equivalent forms.

        ``"sparse_vector"``: Elasticsearch's ``sparse_vector`` query with the clauses as its
        ``query_vector`` and pruning off. ``"bool"``: a ``bool`` of ``should`` ``term`` queries on
        the ``sparse_vector`` field, each boosted by x'_j. Both are the same Lucene query (a
        disjunction of linear feature queries, so the same scores and the same bound); the first
        is the smaller request and Elasticsearch parses it faster (``scripts/bench_search.py``).
        ``"rank_feature"``, OpenSearch's only form (:mod:`es_scm.engines`): a ``bool``
        of ``should`` ``rank_feature`` queries on the ``rank_features`` field's feature
        ``<field>.<term>``, ``linear`` and boosted by x'_j — the same Lucene query again.
        ``filter`` clauses restrict the matches without changing any score.
        """
        if query_type == "sparse_vector":
            queries = [
                {
                    "sparse_vector": {
                        "field": name,
                        "query_vector": {str(term): boost for term, boost in clauses},
                        "prune": False,
                    }
                }
                for name, clauses in self._parts()
            ]
            query: dict[str, Any] = (
                queries[0] if len(queries) == 1 else {"bool": {"should": queries}}
            )
        elif query_type == "rank_feature":
            features = [
                {"rank_feature": {"field": f"{name}.{term}", "linear": {}, "boost": boost}}
                for name, clauses in self._parts()
                for term, boost in clauses
            ]
            query = {"bool": {"should": features}}
        else:
            should = [
                {"term": {name: {"value": str(term), "boost": boost}}}
                for name, clauses in self._parts()
                for term, boost in clauses
            ]
            query = {"bool": {"should": should}}
        return restricted(query, filter)

    def exact_scores(self, documents: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[float]:
        """SCM(x, y) = x'ᵀy' / ‖Wx‖_S of documents given by their stored y' as (term ids,
        values), in one product (:meth:`~es_scm.similarity.scm.QueryVector.scores`)."""
        if not documents:
            return []
        rows = stored_rows(documents, self.expansion.shape[1])
        return self.scores(rows).tolist()

    def native_score(self, es_score: float) -> float:
        """Elasticsearch's estimate of the SCM: its score divided by the query's soft norm."""
        return es_score / self.norm if self.norm > 0.0 else 0.0

    def unseen_upper_bound(self, lowest_native_score: float) -> float:
        """The largest SCM a document can have whose Elasticsearch score is at most
        ``lowest_native_score``: (s / ((1 − ε)(1 − δ)) + P) / ‖Wx‖_S, with ε the 9-bit storage
        error, δ = (m + 2)·2⁻²⁴ the float32 rounding of m clauses and P the pruned mass
        (derived in :mod:`es_scm.search.exact`)."""
        return float(self.upper_bounds(np.array([lowest_native_score]))[0])

    def upper_bounds(self, native_scores: np.ndarray) -> np.ndarray:
        """:meth:`unseen_upper_bound` of each of ``native_scores`` (increasing in the score)."""
        delta = (self.clause_count + 2) * FLOAT32_UNIT_ROUNDOFF
        numerators = native_scores / ((1.0 - FEATURE_VALUE_ERROR) * (1.0 - delta))
        return (numerators + self.pruned_mass) / self.norm


class QueryTooLongError(ValueError):
    """A query with more words than allowed (``max_query_words``): ``words`` and ``limit``."""

    def __init__(self, words: int, limit: int) -> None:
        super().__init__(
            f"the query has {words} words, more than max_query_words={limit}; shorten it, or "
            "raise max_query_words"
        )
        self.words = words
        self.limit = limit


def query_text(text: str, max_words: int) -> tuple[str, int]:
    """A query's text as every search method reads it, and its number of words: runs of letters
    and digits, stop words included (an Elasticsearch analyzer keeps them).

    A lone surrogate (``"\\udcff"``: a byte that is not UTF-8, decoded with ``surrogateescape``
    as Python decodes command-line arguments) becomes U+FFFD, the replacement character, so the
    text can be sent as JSON; neither is a letter, so no word changes.

    Raises
    ------
    QueryTooLongError
        When the text has more than ``max_words`` words.
    """
    text = _SURROGATE.sub("\ufffd", text)
    words = sum(1 for _ in _WORD.finditer(text))
    if words > max_words:
        raise QueryTooLongError(words, max_words)
    return text, words


def bm25_query(
    text: str,
    filters: Sequence[Mapping[str, Any]] = (),
    ids: Sequence[str] | None = None,
    *,
    name: str | None = None,
) -> dict[str, Any]:
    """BM25: Elasticsearch's ``match`` query of ``text`` on the text field, analyzed by the
    field's analyzer (the index's ``text_analyzer``), restricted by the ``filters`` clauses and,
    if given, to the documents ``ids`` (restrictions change no score); ``name`` names the
    ``match`` (its score is then reported by name: :func:`~es_scm.search.hybrid.legs.reported`).

    The one BM25 query of es-scm: hybrid search, tuning, the evaluations and the demo send it.
    """
    match: dict[str, Any] = {"match": {TEXT_FIELD: text}}
    if name is not None:
        match = {"match": {TEXT_FIELD: {"query": text, "_name": name}}}
    restrictions = [*filters, *([{"ids": {"values": list(ids)}}] if ids is not None else [])]
    return restricted(match, restrictions)


def restricted(query: dict[str, Any], filters: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """``query`` restricted by ``filters`` (which change no score)."""
    if not filters:
        return query
    return {"bool": {"must": [query], "filter": [dict(f) for f in filters]}}


def clause_count(clause: Mapping[str, Any]) -> int:
    """The Lucene clauses an Elasticsearch query clause adds to a query, as far as its JSON says:
    a ``bool``'s are its clauses', any other clause is one (the cluster's clause limit counts
    them all, filters included)."""
    body = clause.get("bool") if len(clause) == 1 else None
    if not isinstance(body, Mapping):
        return 1
    parts = []
    for occur in ("must", "should", "filter", "must_not"):
        value = body.get(occur, [])
        parts += [value] if isinstance(value, Mapping) else list(value)
    return max(1, sum(clause_count(part) for part in parts if isinstance(part, Mapping)))


def clause_budget(limit: int, filters: Sequence[Mapping[str, Any]], bm25_words: int = 0) -> int:
    """The clauses the expansion may have beside ``filters`` under the cluster's ``limit``; with
    ``bm25_words``, BM25's query of one clause a word must fit beside the filters too.

    Raises
    ------
    ValueError
        When the filters (and BM25's words) leave no room, in one line.
    """
    used = sum(map(clause_count, filters))
    if bm25_words and bm25_words + max(used, 1) > limit:
        raise ValueError(
            f"BM25's query has a clause per word: {bm25_words} words and {used} filter clauses "
            f"exceed the cluster's limit of {limit} clauses; shorten the query"
        )
    if used >= limit:
        raise ValueError(
            f"the filters have {used} clauses, the cluster's limit of {limit} "
            "clauses leaves none for the query"
        )
    return limit - used


@dataclass(frozen=True)
class Pruning:
    r"""Which terms of the expansion a first phase sends: two-phase search's retrieval.

    Each query term i sends its own term and its ``neighbours`` strongest neighbours (the
    largest s_ij, j ≠ i; ties by term id); a query word outside the vocabulary, its
    ``max(neighbours, 1)`` strongest. Every term sent keeps its whole weight
    :math:`x'_j = \sum_i x_i s_{ij}`, and every candidate is then scored with the exact SCM of
    the whole S from its stored vector: the pruning changes which documents are candidates,
    never a score. The terms left out add at most ‖x'_T‖₂ to any document's x'ᵀy' (Cauchy–
    Schwarz with ‖y'‖₂ ≤ 1), which is the query's ``pruned_mass``: the first phase's bound
    (:mod:`es_scm.search.exact`).

    With document-side expansion (the index holds Sy', the query sends Wx) nothing is pruned.
    """

    neighbours: int

    def __post_init__(self) -> None:
        check(self.neighbours, "neighbours", NON_NEGATIVE_INT)

    def kept(self, model: SoftCosineModel, vector: QueryVector) -> np.ndarray:
        """The terms the first phase may send (sorted term ids)."""
        rows = model.similarity_matrix.rows
        chosen = [vector.weights.indices.astype(np.int64)]
        for i in vector.weights.indices.tolist():
            start, end = rows.indptr[i], rows.indptr[i + 1]
            terms, values = rows.indices[start:end], rows.data[start:end]
            others = terms != i
            chosen.append(_strongest(terms[others], values[others], self.neighbours))
        for word in vector.unseen:
            chosen.append(_strongest(word.terms, word.similarities, max(self.neighbours, 1)))
        return np.unique(np.concatenate(chosen))


def _strongest(terms: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """The ``n`` terms of the largest values (ties: the smaller term id)."""
    if len(terms) <= n:
        return np.asarray(terms, dtype=np.int64)
    order = np.lexsort((terms, -np.asarray(values, dtype=np.float64)))
    return np.asarray(terms, dtype=np.int64)[order[:n]]


def expand_query(
    model: SoftCosineModel,
    text: str,
    max_clauses: int,
    expansion: str = "query",
    pruning: Pruning | None = None,
) -> ExpandedQuery:
    """Vectorize ``text`` as a query and expand it to x' = SᵀWx, keeping at most ``max_clauses``.

    The clauses are the positive entries of x' (``expansion="query"``) or of Wx itself
    (``"documents"``: the index holds Sy'), the largest weights first; with ``pruning`` (a
    first phase) only the terms it keeps (:class:`Pruning`). What they leave out is counted
    (``pruned_terms``) and bounded (``pruned_mass``: see the module docstring). The exact
    scores read the whole x' either way.

    ``max_clauses`` (a positive integer) and ``expansion`` (one of
    :data:`~es_scm.index.schema.EXPANSIONS`) were checked where they entered: the searcher's
    options and the index's ``_meta``.

    Raises
    ------
    ValueError
        If the query's xᵀSx is not positive (S is not positive semi-definite on it).
    """
    side = expansion
    matrix = model.similarity_matrix
    vector = model.query_vector(text).require_norm()
    weights = vector.weights
    expanded = vector.expansion
    # the index holds y' (send x') or Sy' (send Wx, and the unseen words' Eᵀx_W on y')
    # (vector, the factor of its left-out norm: a number, or a function computing it if needed)
    sent: list[tuple[Any, Any]] = (
        [(expanded, 1.0)] if side == "query" else [(weights, matrix.spectral_norm_bound)]
    )
    if side == "documents" and vector.unseen_expansion is not None:
        sent.append((vector.unseen_expansion, 1.0))
    pruned_terms, pruned_mass = 0, 0.0
    if pruning is not None and side == "query":
        sent[0], pruned_terms, pruned_mass = _pruned(expanded, pruning.kept(model, vector))
    kept, limited, limited_mass = _select(sent, max_clauses)
    terms, values = kept[0]
    extra = kept[1] if len(kept) > 1 else (_NO_IDS, _NO_VALUES)
    return ExpandedQuery(
        weights=weights,
        expansion=expanded,
        norm=vector.norm,
        unseen=vector.unseen,
        unseen_expansion=vector.unseen_expansion,
        clause_terms=terms,
        clause_weights=values,
        pruned_terms=pruned_terms + limited,
        # the left-out parts of one vector: their norms add up (triangle inequality)
        pruned_mass=pruned_mass + limited_mass,
        limited_terms=limited,
        has_negative=bool((expanded.data < 0).any() or (weights.data < 0).any()),
        field=VECTOR_FIELD if side == "query" else EXPANDED_FIELD,
        extra_terms=extra[0],
        extra_weights=extra[1],
    )


def _pruned(expansion: sp.csr_array, kept: np.ndarray) -> tuple[tuple[Any, float], int, float]:
    """The expansion's entries on the ``kept`` terms (as a part to send), and the number and
    the Euclidean norm of its positive entries left out."""
    inside = np.isin(expansion.indices, kept, assume_unique=False)
    positive = expansion.data > 0.0
    left = expansion.data[positive & ~inside]
    part = sp.csr_array(
        (expansion.data[inside], expansion.indices[inside], [0, int(inside.sum())]),
        shape=expansion.shape,
    )
    return (part, 1.0), len(left), float(np.linalg.norm(left))


def _select(
    parts: list[tuple[Any, Any]], max_clauses: int
) -> tuple[list[tuple[np.ndarray, np.ndarray]], int, float]:
    """The largest positive entries of the vectors in ``parts``, at most ``max_clauses`` in all.

    ``parts`` are (vector, factor): a left-out entry v of a part adds ``|v|`` times the part's
    factor (a number, or a function giving it, called only then) to the pruned mass's norm, by
    part: Σ_parts factor · ‖left out‖₂. Returns the kept (terms, weights) of each part, largest
    first, the number left out, and the pruned mass.
    """
    values, numbers, terms = [], [], []
    for number, (vector, _) in enumerate(parts):
        positive = vector.data > 0.0
        values.append(np.asarray(vector.data[positive], dtype=np.float64))
        terms.append(np.asarray(vector.indices[positive], dtype=np.int64))
        numbers.append(np.full(len(values[-1]), number, dtype=np.int64))
    value, number_of, term = (np.concatenate(arrays) for arrays in (values, numbers, terms))
    # largest value first; equal values by part, then by term
    order = np.lexsort((term, number_of, -value))
    chosen, dropped = order[:max_clauses], order[max_clauses:]
    kept = [
        (term[chosen][number_of[chosen] == number], value[chosen][number_of[chosen] == number])
        for number in range(len(parts))
    ]
    mass = 0.0
    for number, (_, factor) in enumerate(parts):
        left = value[dropped][number_of[dropped] == number]
        if len(left):
            mass += float(np.linalg.norm(left)) * (factor() if callable(factor) else factor)
    return kept, len(dropped), mass
