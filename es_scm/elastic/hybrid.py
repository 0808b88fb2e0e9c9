r"""Hybrid search: BM25 on the text field fused with the exact SCM, computed by es-scm.

Both sides retrieve their own candidates over the same (filtered) documents:

* **BM25**: Elasticsearch's ``match`` query on the ``text`` field, its top ``depth``;
* **SCM**: ``exact`` mode's top ``depth``, provably the brute-force top ``depth`` of the SCM.

``depth`` is at least ``from + k`` (default 100). The fused score of a candidate (the union of
the two lists) is, with :mod:`es_scm.fusion`:

``fusion="rrf"``
    Σ over the lists that contain it of 1 / (``rrf_k`` + its rank in the list). A document in
    neither list has no score by definition, so the result is exactly the top k of this fusion.
``fusion="linear"`` (the default, α = 0.3: see :data:`es_scm.defaults.HYBRID_DEFAULTS`)
    α · minmax(BM25) + (1 − α) · minmax(SCM), each side min-max normalized over the candidates.
    Every candidate gets both scores: its exact SCM (from its stored vector) and its BM25 score
    (a ``match`` restricted to the candidates that BM25 did not return; 0 if no term matches).
    A document outside both lists has BM25 ≤ the BM25 list's lowest score and SCM ≤ the SCM
    list's lowest (or 0 when a list holds every match), so its fused score is at most
    α · scaled(lowest BM25) + (1 − α) · scaled(lowest SCM) under the candidates' normalization;
    ``exact_guarantee`` is True when the k-th fused score exceeds that bound, i.e. when the
    result is the exact top k of the linear fusion over every (filtered) document with the
    candidates' normalization. Otherwise a note says so and a larger ``depth`` may prove it.

Each hit's ``components`` holds its ``bm25`` and ``scm`` scores (None where a side did not score
it, with RRF), and ``score`` the fused one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from es_scm.defaults import FUSIONS, HYBRID_DEFAULTS
from es_scm.elastic.calls import Plan, search_call
from es_scm.elastic.results import Hit, SearchResult
from es_scm.elastic.schema import TEXT_FIELD, public_source, stored_vector
from es_scm.fusion import min_max_range, reciprocal_rank_fusion, scale
from es_scm.model.brute_force import rank
from es_scm.validation import FRACTION, NON_NEGATIVE_INT, POSITIVE_INT, Options, check

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.elastic.query import ExpandedQuery

#: ``exact(expanded, k, from_, filters)``: the plan of exact mode (its result may be unproven).
ExactPlan = Callable[["ExpandedQuery", int, int, list], Plan]

__all__ = ["HybridOptions", "hybrid_options", "hybrid_plan"]

HybridOptions = dict[str, Any]
_CONSTRAINTS = {
    "fusion": Options(FUSIONS),
    "alpha": FRACTION,
    "rrf_k": NON_NEGATIVE_INT,
    "depth": POSITIVE_INT,
}


def hybrid_options(**given: Any) -> HybridOptions:
    """The hybrid options: ``fusion``, ``alpha``, ``rrf_k``, ``depth`` (None: the default)."""
    options = {**HYBRID_DEFAULTS, **{k: v for k, v in given.items() if v is not None}}
    unknown = sorted(set(options) - set(HYBRID_DEFAULTS))
    if unknown:
        raise TypeError(f"unknown hybrid option {unknown[0]!r}")
    return {name: check(value, name, _CONSTRAINTS[name]) for name, value in options.items()}


def hybrid_plan(
    index: str,
    query: str,
    expanded: ExpandedQuery,
    page: tuple[int, int],
    filters: list[dict[str, Any]],
    options: HybridOptions,
    exact: ExactPlan,
) -> Plan:
    """The top ``k`` after ``from_`` (``page``) of BM25 fused with the SCM (module docstring).

    A plan (:mod:`es_scm.elastic.calls`): it yields its Elasticsearch calls.
    """
    k, from_ = page
    need = from_ + k
    depth = max(options["depth"], need)
    bm25_hits = yield from _bm25(index, query, depth, filters)
    bm25 = {doc_id: score for doc_id, score, _ in bm25_hits}
    sources = {doc_id: source for doc_id, _, source in bm25_hits}
    scm_result = (yield from exact(expanded, depth, 0, filters)) if not expanded.empty else None
    scm: dict[str, float] = {}
    if scm_result is not None:
        for hit in scm_result.hits:
            scm[hit.id] = hit.score
            sources.setdefault(hit.id, hit.source)
    candidates = list(dict.fromkeys([*bm25, *scm]))
    scm_proven = scm_result is None or not scm_result.unproven
    if options["fusion"] == "rrf":
        fused = reciprocal_rank_fusion([list(bm25), list(scm)], options["rrf_k"])
        proven = scm_proven
        components = {c: {"bm25": bm25.get(c), "scm": scm.get(c)} for c in candidates}
    else:
        full_scm = _exact_scores(expanded, candidates, scm, bm25_hits)
        others = [c for c in candidates if c not in bm25]
        full_bm25 = {**(yield from _bm25_of(index, query, others)), **bm25}
        fused, bound = _linear(full_bm25, full_scm, candidates, options["alpha"], bm25, scm, depth)
        ranked = rank(fused.items())
        proven = scm_proven and (len(ranked) < need or ranked[need - 1][1] > bound)
        components = {
            c: {"bm25": full_bm25.get(c, 0.0), "scm": full_scm.get(c, 0.0)} for c in candidates
        }
    ranked = rank(fused.items())
    hits = [
        Hit(
            doc_id,
            score,
            public_source(sources.get(doc_id, {})),
            components=components[doc_id],
            vector=stored_vector(sources.get(doc_id, {})),
        )
        for doc_id, score in ranked[from_:need]
    ]
    result = SearchResult(hits=hits, mode="hybrid", candidates=len(candidates), rounds=1)
    result.exact_guarantee = bool(proven)
    if not proven:
        result.notes.append(
            f"the linear fusion's top {need} is exact over the {len(candidates)} candidates; a "
            "document outside both lists could still rank higher (raise depth to prove it)"
        )
    return result


def _bm25(index: str, query: str, size: int, filters: list[dict[str, Any]]) -> Plan:
    """BM25's top ``size``: (id, score, source) best first."""
    match: dict[str, Any] = {"match": {TEXT_FIELD: query}}
    if filters:
        match = {"bool": {"must": [match], "filter": filters}}
    kwargs = {"index": index, "query": match, "size": size, "source": True}
    response = yield search_call(**kwargs, track_total_hits=False)
    return [(h["_id"], float(h["_score"]), h["_source"]) for h in response["hits"]["hits"]]


def _bm25_of(index: str, query: str, ids: list[str]) -> Plan:
    """The BM25 scores of the given documents (those without a matching term are left out)."""
    if not ids:
        return {}
    match = {
        "bool": {"must": [{"match": {TEXT_FIELD: query}}], "filter": [{"ids": {"values": ids}}]}
    }
    kwargs = {"index": index, "query": match, "size": len(ids), "source": False}
    response = yield search_call(**kwargs, track_total_hits=False)
    return {h["_id"]: float(h["_score"]) for h in response["hits"]["hits"]}


def _exact_scores(
    expanded: ExpandedQuery,
    candidates: list[str],
    scm: Mapping[str, float],
    bm25_hits: list[tuple[str, float, dict]],
) -> dict[str, float]:
    """The exact SCM of every candidate: the SCM side's, or from a BM25 hit's stored vector."""
    scores = dict(scm)
    for doc_id, _, source in bm25_hits:
        if doc_id not in scores:
            scores[doc_id] = expanded.exact_score(*stored_vector(source))
    return {c: scores.get(c, 0.0) for c in candidates}


def _linear(
    bm25: Mapping[str, float],
    scm: Mapping[str, float],
    candidates: list[str],
    alpha: float,
    bm25_list: Mapping[str, float],
    scm_list: Mapping[str, float],
    depth: int,
) -> tuple[dict[str, float], float]:
    """Fused scores of the candidates, and the bound on any document outside both lists."""
    b_low, b_high = min_max_range(bm25, candidates)
    s_low, s_high = min_max_range(scm, candidates)
    fused = {
        c: alpha * scale(bm25.get(c, 0.0), b_low, b_high)
        + (1.0 - alpha) * scale(scm.get(c, 0.0), s_low, s_high)
        for c in candidates
    }
    # an outside document scores at most each list's lowest score (0 when the list was short)
    b_out = min(bm25_list.values()) if len(bm25_list) >= depth else 0.0
    s_out = min(scm_list.values()) if len(scm_list) >= depth else 0.0
    bound = alpha * max(0.0, scale(b_out, b_low, b_high)) + (1.0 - alpha) * max(
        0.0, scale(s_out, s_low, s_high)
    )
    return fused, bound
