"""The data of ``scripts/choose_fusion.py``: every leg's list, the query signals and the
per-query measure of a grid of fusion weights, for each training and check collection (cached).

For every judged query of a collection (the loaders of ``scripts/choose_sources.py``), three legs
over the collection's documents, each its top ``depth`` (100; SemEval: the question's 10
candidates):

``bm25``
    Elasticsearch's BM25 with the ``english`` analyzer (``choose_defaults.bm25_runs``: its top
    1,000, cached under the same name as ``choose_sources.py``'s). A candidate outside BM25's top
    1,000 scores 0 (as in ``choose_sources.py``).
``scm``
    The exact SCM of the **default model** (``SoftCosineModel.build(corpus, "auto")``: the
    sentence encoder's static term vectors, what ``es-scm model build`` makes), by
    :class:`~es_scm.model.BruteForceSearch`: what ``exact`` search returns, and the score of
    every candidate.
``dense``
    all-MiniLM-L6-v2's exact kNN score (1 + cos) / 2, as a ``flat`` field scores it, of every
    document (``choose_sources.Encoder``'s cached embeddings).

The candidates of a fusion are the union of its legs' lists, and each candidate has every leg's
score, as hybrid search fuses them (:func:`es_scm.evaluation.tuning.fused_run`). The signals of
each query are :func:`es_scm.fusion.signals.query_signals` of the three lists, the query's x and
x' and the SCM list's best stored y' — what hybrid search holds before it fuses.

The measures (× 100) are computed here in numpy for speed, and checked against ``ir_measures``
and SemEval's official AP on the baselines (:func:`check_measures`): nDCG@10 (SciFact, NFCorpus),
AP over the top 100 (Cranfield, CISI, CACM) and SemEval's official AP (AP = 0 without a relevant
candidate).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from choose_defaults import Collection, bm25_runs
from choose_sources import Cache, Encoder, corpus_key, digest, load, per_query

from es_scm.evaluation.tuning import weight_grid
from es_scm.fusion.signals import query_signals
from es_scm.model import BruteForceSearch, SoftCosineModel

logger = logging.getLogger("fusion_lab")

LEG_NAMES = ("bm25", "scm", "dense")
#: Bump when what a query's record holds changes (the cached records are keyed by it).
DATA_VERSION = 1
#: The two-way weight grid: α (BM25's weight) in steps of 0.025; the SCM's is 1 − α.
ALPHAS = np.round(np.linspace(0.0, 1.0, 41), 4)
#: The three-way weight grid: every (bm25, scm, dense) weighting in steps of 0.05.
SIMPLEX = np.array([[w["bm25"], w["scm"], w["dense"]] for w in weight_grid(0.05)], dtype=np.float64)


@dataclass
class QueryData:
    """One query: its candidates (the union of the three lists) with every leg's score.

    ``scores[l, c]`` is leg l's score of candidate c (0: no match), ``listed[l, c]`` whether c
    is in leg l's top list; ``gains[c]`` its relevance grade; ``order[c]`` its place in the
    tie-breaking order (the id's place among the candidates' sorted ids; SemEval: the gold
    file's order); ``ideal`` is the ideal DCG@10 (nDCG@10), the number of relevant documents
    (AP@100) or unused (SemEval).
    """

    qid: str
    candidates: list[str]
    scores: np.ndarray
    listed: np.ndarray
    gains: np.ndarray
    order: np.ndarray
    ideal: float
    signals: dict[str, float]


@dataclass
class CollectionData:
    """A collection's queries, its measure (``nDCG@10``, ``AP@100`` or ``MAP``) and depth."""

    name: str
    measure: str
    depth: int
    queries: list[QueryData]


@dataclass
class Tables:
    """One collection's per-query measures (``scripts/choose_fusion.py``): each grid's
    (kind → (Q, G)), the references' (row → (Q,)) and the signals (name → (Q,), NaN: missing)."""

    name: str
    measure: str
    qids: list[str]
    grids: dict[str, np.ndarray]
    references: dict[str, np.ndarray]
    signals: dict[str, np.ndarray] = field(default_factory=dict)


# -- building the records ------------------------------------------------------------------------


def collection_data(cache: Cache, client: Any, encoder: Encoder, name: str) -> CollectionData:
    """Every judged query's record of collection ``name`` (cached)."""

    def compute() -> CollectionData:
        collection = load(name)
        started = time.perf_counter()
        bm25 = cache.pickled(
            f"legs/{name}-bm25-english", lambda: bm25_runs(client, collection, "english")
        )
        model = default_model(cache, collection)
        dense = dense_scores(encoder, collection)
        records = _records(collection, model, bm25, dense)
        logger.info("%s: %d queries in %.0fs", name, len(records), time.perf_counter() - started)
        measure = "MAP" if collection.questions else collection.measure
        return CollectionData(name, measure, collection.depth, records)

    return cache.pickled(f"fusion/{name}-data-{DATA_VERSION}", compute)


def default_model(cache: Cache, collection: Collection) -> SoftCosineModel:
    """The default model of the collection's corpus (``auto``), saved under the cache."""
    key = corpus_key(collection)
    if collection.questions:
        key = "semeval-" + collection.name.split("-")[1]
    folder = cache.path("fusion", "models", key)
    if (folder / "model.json").exists():
        return SoftCosineModel.load(folder)
    started = time.perf_counter()
    model = SoftCosineModel.build(collection.corpus, "auto", n_jobs=1)
    logger.info(
        "%s: default model built in %.0fs (%d terms, S %d non-zeros, hybrid %s)",
        key,
        time.perf_counter() - started,
        len(model.terms),
        model.similarity_matrix.nnz,
        model.hybrid,
    )
    model.save(folder)
    return model


def dense_scores(encoder: Encoder, collection: Collection) -> np.ndarray:
    """(1 + cos) / 2 of every query (rows, in the collection's order) and document."""
    corpus = (
        "semeval-" + collection.name.split("-")[1]
        if collection.questions
        else corpus_key(collection)
    )
    documents = encoder.texts(f"{corpus}-documents", list(collection.documents.values()))
    queries = encoder.texts(f"{collection.name}-queries", list(collection.queries.values()))
    cosines = queries.astype(np.float64) @ documents.astype(np.float64).T
    return (1.0 + cosines) / 2.0


def _records(
    collection: Collection,
    model: SoftCosineModel,
    bm25: Mapping[str, Mapping[str, float]],
    dense: np.ndarray,
) -> list[QueryData]:
    ids = list(collection.documents)
    position = {doc: n for n, doc in enumerate(ids)}
    brute = BruteForceSearch(model, ids, collection.documents.values())
    stored = brute.documents.tocsr()
    idf = model.query_weighting.global_weights(model.vocabulary)
    questions = {q.id: q for q in collection.questions}
    depth = collection.depth
    records = []
    for row, (qid, text) in enumerate(collection.queries.items()):
        vector = model.query_vector(text)
        scm_all = vector.scores(brute.documents)
        dense_all = dense[row]
        question = questions.get(qid)
        pool = (
            np.array([position[c] for c in question.candidate_ids])
            if question is not None
            else np.arange(len(ids))
        )
        scm_top = _top(ids, scm_all, pool, depth, positive=True)
        dense_top = _top(ids, dense_all, pool, depth, positive=False)
        bm25_top = dict(
            sorted(bm25.get(qid, {}).items(), key=lambda item: (-item[1], item[0]))[:depth]
        )
        lists = {"bm25": bm25_top, "scm": scm_top, "dense": dense_top}
        candidates = list(dict.fromkeys(doc for top in lists.values() for doc in top))
        at = np.array([position[c] for c in candidates], dtype=np.int64)
        known = bm25.get(qid, {})
        scores = np.vstack(
            [
                [float(known.get(c, 0.0)) for c in candidates],
                scm_all[at],
                dense_all[at],
            ]
        )
        listed = np.array([[c in lists[leg] for c in candidates] for leg in LEG_NAMES])
        judged = collection.qrels.get(qid, {})
        gains = np.array([max(float(judged.get(c, 0)), 0.0) for c in candidates])
        if question is not None:
            gold = {c: n for n, c in enumerate(question.candidate_ids)}
            order = np.array([gold[c] for c in candidates], dtype=np.int64)
            ideal = 0.0
        else:
            order = np.argsort(np.argsort(np.array(candidates, dtype=object), kind="stable"))
            grades = sorted((max(float(g), 0.0) for g in judged.values()), reverse=True)
            if collection.measure == "nDCG@10":
                ideal = sum(g / math.log2(i + 2) for i, g in enumerate(grades[:10]))
            else:
                ideal = float(sum(g > 0 for g in grades))
        scm_vectors = [
            (
                stored.indices[stored.indptr[i] : stored.indptr[i + 1]],
                stored.data[stored.indptr[i] : stored.indptr[i + 1]],
            )
            for i in (position[c] for c in list(scm_top)[:10])
        ]
        signals = query_signals(lists, query=vector, idf=idf, scm_vectors=scm_vectors)
        records.append(
            QueryData(qid, candidates, scores, listed, gains, order, ideal, dict(signals.values))
        )
    return records


def _top(
    ids: Sequence[str], scores: np.ndarray, pool: np.ndarray, depth: int, positive: bool
) -> dict[str, float]:
    """The best ``depth`` of ``pool`` (positive scores only if ``positive``), by score then id."""
    values = scores[pool]
    kept = pool[values > 0] if positive else pool
    if len(kept) > depth:
        kth = np.partition(scores[kept], len(kept) - depth)[len(kept) - depth]
        kept = kept[scores[kept] >= kth]
    ranked = sorted(((ids[i], float(scores[i])) for i in kept), key=lambda x: (-x[1], x[0]))
    return dict(ranked[:depth])


# -- measures of fused rankings ------------------------------------------------------------------


def normalized(query: QueryData, legs: Sequence[int], mask: np.ndarray, kind: str) -> np.ndarray:
    """The legs' scores of the candidates in ``mask``, normalized as ``kind`` (``max``,
    ``zscore``, ``linear``) over them, as :mod:`es_scm.fusion` does: (legs, candidates)."""
    values = query.scores[np.asarray(legs)][:, mask]
    out = np.zeros_like(values)
    for row, v in enumerate(values):
        if not len(v):
            continue
        if kind == "max":
            shift, scale = 0.0, float(v.max())
        elif kind == "zscore":
            shift, scale = float(v.mean()), float(v.std())
        else:
            shift, scale = float(v.min()), float(v.max() - v.min())
        if scale > 0.0:
            out[row] = (v - shift) / scale
    return out


def grid_measures(
    query: QueryData,
    measure: str,
    depth: int,
    legs: Sequence[int],
    weights: np.ndarray,
    kind: str,
) -> np.ndarray:
    """The measure (× 100) of the fusion of ``legs`` by each row of ``weights`` (over the union
    of those legs' lists, normalized as ``kind``)."""
    mask = query.listed[np.asarray(legs)].any(axis=0)
    fused = weights @ normalized(query, legs, mask, kind)
    return ranking_measures(query, measure, depth, fused, mask)


def ranking_measures(
    query: QueryData, measure: str, depth: int, fused: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    """The measure (× 100) of each row of ``fused`` (scores of the candidates in ``mask``).

    SemEval ranks all of a question's candidates: those outside the fused lists score 0 (as
    ``semeval.rankings_from_scores`` reads a run), ties in the gold file's order."""
    fused = np.atleast_2d(fused)
    out = np.zeros(len(fused))
    if measure == "MAP":  # SemEval: ties in the gold order, scores rounded as the scorer does
        relevant = query.gains > 0
        every = np.zeros(len(query.candidates))
        for row, scores in enumerate(fused):
            every[:] = 0.0
            every[mask] = scores
            ranked = np.lexsort((query.order, -np.round(every, 12)))
            out[row] = _semeval_ap(relevant[ranked])
        return out
    gains = query.gains[mask]
    order = query.order[mask]
    if query.ideal <= 0.0:
        return out
    for row, scores in enumerate(fused):
        kept = np.lexsort((order, -scores))[:depth]  # the run: top depth, ties by id
        ranked = kept[np.lexsort((-order[kept], -scores[kept]))]  # trec_eval: ties by id desc
        g = gains[ranked]
        if measure == "nDCG@10":
            top = g[:10]
            out[row] = 100.0 * float(top @ DISCOUNTS[: len(top)]) / query.ideal
        else:  # AP over the top 100
            hits = (g[:100] > 0).astype(np.float64)
            if hits.any():
                precision = np.cumsum(hits) / np.arange(1, len(hits) + 1)
                out[row] = 100.0 * float((precision * hits).sum()) / query.ideal
    return out


DISCOUNTS = 1.0 / np.log2(np.arange(2, 12))


def _semeval_ap(relevant: np.ndarray) -> float:
    top = relevant[:10].astype(np.float64)
    if not top.any():
        return 0.0
    precision = np.cumsum(top) / np.arange(1, len(top) + 1)
    return 100.0 * float((precision * top).sum() / top.sum())


def leg_alone(query: QueryData, measure: str, depth: int, leg: int) -> float:
    """The measure of one leg's own list."""
    mask = query.listed[leg]
    return float(ranking_measures(query, measure, depth, query.scores[leg][mask], mask)[0])


def check_measures(data: CollectionData, collection: Collection) -> float:
    """The largest difference between this module's measures and ``choose_sources.per_query``
    (ir_measures; SemEval's official AP) over the legs alone and two fusions: 0 if they agree."""
    runs: dict[str, dict[str, dict[str, float]]] = {}
    ours: dict[str, dict[str, float]] = {}
    fusions = {
        "bm25": ([0], np.array([[1.0]]), "max"),
        "scm": ([1], np.array([[1.0]]), "max"),
        "dense": ([2], np.array([[1.0]]), "max"),
        "max@0.6": ([0, 1], np.array([[0.6, 0.4]]), "max"),
        "zscore3": ([0, 1, 2], np.array([[0.4, 0.1, 0.5]]), "zscore"),
    }
    for row, (legs, weights, kind) in fusions.items():
        runs[row], ours[row] = {}, {}
        for q in data.queries:
            mask = q.listed[np.asarray(legs)].any(axis=0)
            fused = (weights @ normalized(q, legs, mask, kind))[0]
            ids = [c for c, m in zip(q.candidates, mask, strict=True) if m]
            ranked = sorted(zip(ids, fused.tolist(), strict=True), key=lambda x: (-x[1], x[0]))
            runs[row][q.qid] = dict(ranked[: data.depth])
            ours[row][q.qid] = float(
                grid_measures(q, data.measure, data.depth, legs, weights, kind)[0]
            )
    reference = per_query(collection, runs)
    return max(abs(reference[row][qid] - value) for row in ours for qid, value in ours[row].items())


def environment(cache_root: Path) -> None:
    """The caches es-scm and the encoder use, offline."""
    os.environ.setdefault("ES_SCM_CACHE", str(cache_root / "es-scm"))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


__all__ = [
    "ALPHAS",
    "LEG_NAMES",
    "SIMPLEX",
    "CollectionData",
    "QueryData",
    "Tables",
    "check_measures",
    "collection_data",
    "digest",
    "environment",
    "grid_measures",
    "leg_alone",
    "normalized",
    "ranking_measures",
]
