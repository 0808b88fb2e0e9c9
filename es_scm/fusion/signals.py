r"""What a hybrid search's legs and its query say about themselves, at no cost: query signals.

Query performance prediction without a request or a model: every signal is computed with numpy
from what hybrid search already holds for a query before it fuses — each leg's top list (ids and
scores, best first), the query's weighted vector x, its expansion x' (Theorem 4.1) and the
stored y' of the SCM leg's best documents — and from nothing else (no score of a document
outside a leg's list, no second search). :class:`~es_scm.fusion.AdaptiveFusion` maps them to the
legs' weights of one query.

Signals of a leg's list (``<leg>.<name>``; :math:`s_1 \ge s_2 \ge \dots` its scores, the list
padded with 0 to :data:`SHAPE_DEPTH`):

``top``, ``log_top``
    :math:`s_1` and :math:`\ln(1 + s_1)`: how well the best document matches (a cosine for the
    SCM, (1 + cos) / 2 for a dense leg, an unbounded sum for BM25).
``ratio2``, ``ratio10``, ``ratio20``
    :math:`s_2/s_1`, :math:`s_{10}/s_1`, :math:`s_{20}/s_1`: how fast the list decays.
``entropy10``
    :math:`-\sum_{i \le 10} p_i \ln p_i / \ln 10` with :math:`p_i = s_i / \sum_{j \le 10} s_j`:
    1 for a flat top ten, lower when a few documents stand out.
``top_z``
    :math:`(s_1 - \bar s) / \sigma_s` over the top :data:`SHAPE_DEPTH`: how far the best stands
    out of the rest (a clarity of the list).
``matches10``
    The share of the top ten with a positive score (a short list: few documents match).

Agreement of two legs A and B (``agree.<A>.<B>.<name>``, legs in
:data:`~es_scm.options.LEGS`' order):

``overlap10``, ``overlap20``
    :math:`|T_k(A) \cap T_k(B)| / k`, :math:`T_k` a list's top k ids.
``top1``
    The mean of [A's best is in B's top ten] and [B's best is in A's top ten].
``spearman20``
    Spearman's correlation of the two lists' ranks over the union of their top twenty (a
    document missing from a list ranks 21st there).

Signals of the query (``query.<name>``, with its vector) and of the SCM's best documents
(``scm.<name>``, with their stored y'):

``terms``, ``log_terms``
    The vocabulary terms of the query (non-zeros of x), n and ln(1 + n).
``unseen_share``
    The share of the query's words that are outside the vocabulary but known to S
    (:mod:`es_scm.similarity.unseen`).
``idf_mean``, ``idf_max``, ``idf_min``
    The query weighting's idf of its terms, divided by the largest idf of the vocabulary (a
    term in one document): rare words near 1, common ones near 0.
``expansion_share``
    :math:`1 - \sum_{i \in q} x'_i / \sum_i x'_i`: the share of the expansion on terms that are
    not the query's own (how much the SCM reaches for similar words).
``soft_norm_ratio``
    :math:`\ln(x'^T x / x^T x)` = ln(‖x‖²_S / ‖x‖²): 0 when the query's terms are unrelated to
    each other, larger when S relates them.
``exact_share1``, ``exact_share10``
    The share of the SCM score that exact matches make, :math:`\sum_i x_i y'_i / x'^T y'` (S's
    diagonal is 1), for the SCM's best document and averaged over its top ten.

A signal that cannot be computed (no such leg, no query vector given) is absent, never NaN: the
fusion then falls back to its fixed weights.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from es_scm.options import LEGS

__all__ = [
    "AGREEMENT_SIGNALS",
    "LEG_SIGNALS",
    "QUERY_SIGNALS",
    "SHAPE_DEPTH",
    "QuerySignals",
    "agreement_signals",
    "leg_signals",
    "query_signals",
    "term_signals",
    "top_lists",
]

#: How many of a leg's best scores its shape signals read (a list is padded with 0 to this).
SHAPE_DEPTH = 20
LEG_SIGNALS = (
    "top",
    "log_top",
    "ratio2",
    "ratio10",
    "ratio20",
    "entropy10",
    "top_z",
    "matches10",
)
AGREEMENT_SIGNALS = ("overlap10", "overlap20", "top1", "spearman20")
QUERY_SIGNALS = (
    "query.terms",
    "query.log_terms",
    "query.unseen_share",
    "query.idf_mean",
    "query.idf_max",
    "query.idf_min",
    "query.expansion_share",
    "query.soft_norm_ratio",
    "scm.exact_share1",
    "scm.exact_share10",
)
#: How many of the SCM's best documents ``exact_share10`` averages over.
EXACT_SHARE_DEPTH = 10

#: A stored document vector: (term ids, values), as Elasticsearch returns y'.
StoredVector = tuple[np.ndarray, np.ndarray]


class SparseRow(Protocol):
    """A sparse row (scipy's ``csr_matrix``/``csr_array`` of one row)."""

    indices: np.ndarray
    data: np.ndarray


class QueryValue(Protocol):
    """A query as the SCM uses it (:class:`es_scm.similarity.scm.QueryVector`): x, x'."""

    @property
    def weights(self) -> Any: ...

    @property
    def expansion(self) -> Any: ...

    @property
    def unseen(self) -> Sequence[Any]: ...


@dataclass(frozen=True)
class QuerySignals:
    """The signals of one query, by name (module docstring): finite floats, the missing ones
    absent.

    Parameters
    ----------
    values : mapping of str to float
    """

    values: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        checked = {}
        for name, value in self.values.items():
            number = float(value)
            if not math.isfinite(number):
                raise ValueError(f"the query signal {name!r} is not finite: {value!r}")
            checked[str(name)] = number
        object.__setattr__(self, "values", checked)

    def get(self, name: str) -> float | None:
        """The signal ``name``, or None when it could not be computed."""
        return self.values.get(name)

    def missing(self, names: Iterable[str]) -> list[str]:
        """Those of ``names`` that are absent."""
        return [name for name in names if name not in self.values]

    def merged(self, other: QuerySignals) -> QuerySignals:
        """These signals with ``other``'s added (``other`` wins on a name in both)."""
        return QuerySignals({**self.values, **other.values})


def top_lists(
    legs: Mapping[str, Mapping[str, float]], candidates: Sequence[str] | None = None
) -> dict[str, list[tuple[str, float]]]:
    """Each leg's best :data:`SHAPE_DEPTH` ``(id, score)`` pairs, by score then id.

    ``candidates`` restricts a leg to those documents (a fusion's scores of every candidate:
    since a document outside a leg's list scores at most the list's lowest, or 0 when the list
    holds every match, the best :data:`SHAPE_DEPTH` of the candidates are the list's own, up to
    ties at its lowest score, whenever the list is at least that long or holds every match).
    """
    tops = {}
    for name, scores in legs.items():
        ids = scores if candidates is None else candidates
        pairs = [(doc, float(scores.get(doc, 0.0))) for doc in ids]
        if len(pairs) > SHAPE_DEPTH:  # a partial sort: the fusion's candidates may be hundreds
            values = np.fromiter((s for _, s in pairs), dtype=np.float64, count=len(pairs))
            kth = np.partition(values, len(values) - SHAPE_DEPTH)[len(values) - SHAPE_DEPTH]
            pairs = [pair for pair, value in zip(pairs, values, strict=True) if value >= kth]
        pairs.sort(key=lambda pair: (-pair[1], pair[0]))
        tops[name] = pairs[:SHAPE_DEPTH]
    return tops


def leg_signals(name: str, scores: Sequence[float]) -> dict[str, float]:
    """The shape signals of one leg's list (its scores best first; module docstring)."""
    top = np.zeros(SHAPE_DEPTH, dtype=np.float64)
    head = np.asarray(list(scores)[:SHAPE_DEPTH], dtype=np.float64)
    top[: len(head)] = np.maximum(head, 0.0)
    best = float(top[0])
    ten = top[:10]
    total = float(ten.sum())
    if total > 0.0:
        p = ten[ten > 0.0] / total
        entropy = float(-(p * np.log(p)).sum() / math.log(10))
    else:
        entropy = 0.0
    spread = float(top.std())
    values = {
        "top": best,
        "log_top": math.log1p(best),
        "ratio2": float(top[1] / best) if best > 0.0 else 0.0,
        "ratio10": float(top[9] / best) if best > 0.0 else 0.0,
        "ratio20": float(top[19] / best) if best > 0.0 else 0.0,
        "entropy10": entropy,
        "top_z": (best - float(top.mean())) / spread if spread > 0.0 else 0.0,
        "matches10": float((ten > 0.0).sum()) / 10.0,
    }
    return {f"{name}.{key}": value for key, value in values.items()}


def agreement_signals(
    first: str, a: Sequence[str], second: str, b: Sequence[str]
) -> dict[str, float]:
    """How much two legs' lists agree (their ids best first; module docstring)."""
    values = {
        "overlap10": len(set(a[:10]) & set(b[:10])) / 10.0,
        "overlap20": len(set(a[:20]) & set(b[:20])) / 20.0,
        "top1": (float(bool(a) and a[0] in b[:10]) + float(bool(b) and b[0] in a[:10])) / 2.0,
        "spearman20": _spearman(a[:20], b[:20]),
    }
    return {f"agree.{first}.{second}.{key}": value for key, value in values.items()}


def _spearman(a: Sequence[str], b: Sequence[str]) -> float:
    """Spearman's ρ of two top lists over their union (missing: rank len + 1); 0 if constant."""
    union = list(dict.fromkeys([*a, *b]))
    if len(union) < 2:
        return 0.0
    rank_a = {doc: r for r, doc in enumerate(a, start=1)}
    rank_b = {doc: r for r, doc in enumerate(b, start=1)}
    x = np.fromiter((rank_a.get(doc, len(a) + 1) for doc in union), np.float64, len(union))
    y = np.fromiter((rank_b.get(doc, len(b) + 1) for doc in union), np.float64, len(union))
    x -= x.mean()
    y -= y.mean()
    spread = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / spread if spread > 0.0 else 0.0


def term_signals(
    query: QueryValue, idf: np.ndarray, scm_vectors: Sequence[StoredVector] = ()
) -> dict[str, float]:
    """The query's signals and the SCM's exact-match shares (module docstring).

    Parameters
    ----------
    query : QueryVector
        x (``weights``, a 1-row CSR over the vocabulary), x' (``expansion``) and the query's
        words outside the vocabulary (``unseen``).
    idf : ndarray of float, shape (n_terms,)
        The query weighting's idf of every vocabulary term
        (:meth:`~es_scm.model.text.TermWeighting.global_weights`).
    scm_vectors : sequence of (term ids, values)
        The stored y' of the SCM leg's best documents, best first (the first
        :data:`EXACT_SHARE_DEPTH` are read); none: no ``scm.*`` signal.
    """
    weights = query.weights
    x_ids = np.asarray(weights.indices, dtype=np.int64)
    x_values = np.asarray(weights.data, dtype=np.float64)
    order = np.argsort(x_ids, kind="stable")
    x_ids, x_values = x_ids[order], x_values[order]
    expansion = query.expansion
    e_ids = np.asarray(expansion.indices, dtype=np.int64)
    e_values = np.asarray(expansion.data, dtype=np.float64)
    order = np.argsort(e_ids, kind="stable")
    e_ids, e_values = e_ids[order], e_values[order]
    terms, unseen = len(x_ids), len(query.unseen)
    out: dict[str, float] = {
        "query.terms": float(terms),
        "query.log_terms": math.log1p(terms),
        "query.unseen_share": unseen / (terms + unseen) if terms + unseen else 0.0,
    }
    largest = float(idf.max()) if len(idf) else 0.0
    if terms and largest > 0.0:
        scaled = idf[x_ids] / largest
        out |= {
            "query.idf_mean": float(scaled.mean()),
            "query.idf_max": float(scaled.max()),
            "query.idf_min": float(scaled.min()),
        }
    own = _sparse_dot(e_ids, e_values, x_ids, np.ones_like(x_values))
    total = float(e_values.sum())
    out["query.expansion_share"] = 1.0 - own / total if total > 0.0 else 0.0
    squared = float(x_values @ x_values)
    soft = _sparse_dot(e_ids, e_values, x_ids, x_values)
    out["query.soft_norm_ratio"] = math.log(soft / squared) if squared > 0 and soft > 0 else 0.0
    shares = []
    for ids, values in list(scm_vectors)[:EXACT_SHARE_DEPTH]:
        ids = np.asarray(ids, dtype=np.int64)
        values = np.asarray(values, dtype=np.float64)
        order = np.argsort(ids, kind="stable")
        ids, values = ids[order], values[order]
        whole = _sparse_dot(e_ids, e_values, ids, values)
        if whole > 0.0:
            shares.append(min(max(_sparse_dot(x_ids, x_values, ids, values) / whole, 0.0), 1.0))
    if shares:
        out["scm.exact_share1"] = shares[0]
        out["scm.exact_share10"] = float(np.mean(shares))
    return out


def _sparse_dot(
    a_ids: np.ndarray, a_values: np.ndarray, b_ids: np.ndarray, b_values: np.ndarray
) -> float:
    """The dot product of two sparse vectors given by sorted unique ids and values."""
    if not len(a_ids) or not len(b_ids):
        return 0.0
    at = np.searchsorted(a_ids, b_ids)
    at[at == len(a_ids)] = 0
    common = a_ids[at] == b_ids
    return float(a_values[at[common]] @ b_values[common])


def query_signals(
    lists: Mapping[str, Mapping[str, float]],
    query: QueryValue | None = None,
    idf: np.ndarray | None = None,
    scm_vectors: Sequence[StoredVector] = (),
) -> QuerySignals:
    """Every signal of one query (module docstring) from what its hybrid search holds.

    Parameters
    ----------
    lists : mapping of leg name to {id: score}
        Each leg's top list as retrieved (:class:`~es_scm.search.hybrid.legs.LegList`'s
        ``scores``), before any score of another candidate is asked for.
    query : QueryVector, optional
        The query's x and x' (the SCM leg's expanded query); with ``idf``, the ``query.*``
        signals, and with ``scm_vectors`` the ``scm.exact_share*`` ones.
    idf : ndarray, optional
        The query weighting's idf of every vocabulary term: the model's
        ``global_weights("query")`` (:meth:`es_scm.model.SoftCosineModel.global_weights`,
        computed once per model).
    scm_vectors : sequence of (term ids, values)
        The stored y' of the SCM list's best documents, in its order.

    Returns
    -------
    QuerySignals
    """
    ordered = sorted(lists, key=lambda leg: LEGS.index(leg) if leg in LEGS else len(LEGS))
    tops = top_lists({name: lists[name] for name in ordered})
    values: dict[str, float] = {}
    for name, pairs in tops.items():
        values |= leg_signals(name, [score for _, score in pairs])
    for first, second in itertools.combinations(list(tops), 2):
        ids_a = [doc for doc, _ in tops[first]]
        ids_b = [doc for doc, _ in tops[second]]
        values |= agreement_signals(first, ids_a, second, ids_b)
    if query is not None and idf is not None:
        values |= term_signals(query, idf, scm_vectors)
    return QuerySignals(values)
