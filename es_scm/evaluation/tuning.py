"""Tune the model on your own collection: a grid of options, k-fold cross-validation over topics.

For every setting of the grid (embeddings, ``nonzero_limit``, ``threshold``, ``exponent``,
``dominant``, ``weighting``, …) a model is built on the collection's documents and every topic is
ranked by

``scm``
    the exact SCM, computed in memory (:class:`~es_scm.model.brute_force.BruteForceSearch`: the
    ranking that ``exact`` search through Elasticsearch returns, by its guarantee);
``<fusion>@α`` (``max@0.5``, ``linear@0.7``, ``zscore@0.3``; ``rrf``)
    BM25 (Elasticsearch's, on an index of the documents) fused with the SCM by a fusion of
    :mod:`es_scm.fusion` — the very objects hybrid search fuses with — over the union of both
    top ``depth`` lists;
``<fusion>[bm25=…,scm=…,dense=…]`` (``zscore[bm25=0.4,scm=0.1,dense=0.5]``; ``rrf+dense``)
    with ``dense``, the three-way fusion of BM25, the SCM and a sentence encoder's dense vectors
    (their cosines computed in memory over every document, as Elasticsearch's exact kNN on a
    ``flat`` field scores them: (1 + cos) / 2), over the union of the three top ``depth`` lists.
    ``dense`` and ``bm25+dense`` (BM25 and kNN fused by ``max`` with 0.5 each, the baseline a
    search engineer would configure) are reported beside them for reference, and never chosen.

Rows are scored by one ``ir_measures`` measure (``measure``: ``AP`` over the ranked ``depth`` by
default; ``nDCG@10``, ``R@100``, …). The topics are split into ``folds`` folds (round robin over
the sorted ids). A row's held-out score is the mean over the folds of its mean on the fold; its
gain is that minus BM25's. The cross-validated estimate of *tuning*
(:attr:`TuningReport.selected`) picks, for every fold, the row with the best score on the other
folds and scores it on the fold: what choosing by this grid is worth on unseen topics.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from es_scm.evaluation.collections import TestCollection
from es_scm.evaluation.trec import BM25_DENSE, Run, evaluate_runs, measure_label
from es_scm.fusion import AdaptiveFusion, Fusion, MaxFusion, ScoreFusion, fusion_from
from es_scm.fusion.signals import QuerySignals, query_signals, term_signals

__all__ = [
    "TuningReport",
    "adaptive_runs",
    "bm25_scores",
    "cross_validate",
    "dense_scores",
    "expand_grid",
    "folds_of",
    "fused_run",
    "fusion_row",
    "hybrid_run",
    "scm_scores",
    "setting_name",
    "tune",
    "weight_grid",
]

logger = logging.getLogger(__name__)

#: How a setting's model is built: ``options -> SoftCosineModel`` (the caller loads embeddings).
ModelFactory = Callable[[dict[str, Any]], Any]


def expand_grid(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in the grid's order (one setting when empty)."""
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]


def setting_name(setting: Mapping[str, Any]) -> str:
    """``key=value,…``, or ``defaults`` for the empty setting."""
    return ",".join(f"{key}={value}" for key, value in setting.items()) or "defaults"


def folds_of(queries: Sequence[str], folds: int) -> list[list[str]]:
    """Round robin over the sorted ids (numeric ids in numeric order): ``folds`` disjoint folds."""
    if folds < 2 or folds > len(queries):
        raise ValueError(f"folds must be in [2, {len(queries)}] (the topics), got {folds}")
    ordered = sorted(queries, key=lambda q: (len(q), q))
    return [ordered[i::folds] for i in range(folds)]


def bm25_scores(
    client: Any, collection: TestCollection, size: int, text_analyzer: str | None = None
) -> dict[str, dict[str, float]]:
    """Elasticsearch's BM25 of every judged topic: its top ``size`` documents and their scores.

    The documents are indexed once, with es-scm's text field (the analyzer of hybrid search:
    ``text_analyzer``, default ``standard``), in a temporary index that is deleted afterwards.
    """
    from es_scm.elastic import SCMIndex
    from es_scm.model import SoftCosineModel
    from es_scm.search.query import bm25_query

    name = f"es-scm-tune-{collection.name.lower()}-{uuid.uuid4().hex[:10]}"
    index = SCMIndex(client, name, SoftCosineModel.build(collection.documents.values()))
    try:
        index.create(text_analyzer=text_analyzer)
        docs = ({"id": d, "text": t} for d, t in collection.documents.items())
        report = index.index_documents(docs, batch_size=500)
        if not report.ok:
            raise RuntimeError(f"indexing failed: {report.summary()}")
        client.indices.refresh(index=name)
        scores = {}
        for qid, text in collection.judged_queries().items():
            response = client.search(
                index=name,
                query=bm25_query(text),
                size=size,
                source=False,
                allow_partial_search_results=False,
            )
            hits = response["hits"]["hits"]
            scores[qid] = {hit["_id"]: float(hit["_score"]) for hit in hits}
        return scores
    finally:
        index.delete()


def _top(scores: Mapping[str, float], depth: int) -> dict[str, float]:
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return dict(ranked[:depth])


def hybrid_run(
    bm25: Mapping[str, float],
    scm: Mapping[str, float],
    fusion: Fusion | float,
    depth: int,
    signals: QuerySignals | None = None,
) -> dict[str, float]:
    """``fusion`` over the union of both top ``depth`` lists, as hybrid search fuses them.

    ``bm25`` and ``scm`` hold every score known (a candidate missing from ``bm25`` scores 0);
    a float is the α of the default fusion (``max``). ``signals``: the query's own (the
    ``adaptive`` fusion; see :func:`fused_run`).
    """
    if not isinstance(fusion, Fusion):
        fusion = MaxFusion(float(fusion))
    legs = {"bm25": bm25, "scm": scm}
    return fused_run(
        legs, {name: _top(scores, depth) for name, scores in legs.items()}, fusion, depth, signals
    )


def fused_run(
    legs: Mapping[str, Mapping[str, float]],
    tops: Mapping[str, Mapping[str, float]],
    fusion: Fusion,
    depth: int,
    signals: QuerySignals | None = None,
) -> dict[str, float]:
    """``fusion`` of the legs named in ``tops`` (each leg's top ``depth``, best first) over the
    union of those lists, as hybrid search fuses them: a score fusion reads every candidate's
    score by each leg from ``legs`` (missing: 0), reciprocal rank fusion the lists alone.

    The ``adaptive`` fusion reads the query's signals: those of the lists ``tops``
    (:func:`~es_scm.fusion.signals.query_signals`) with ``signals`` (e.g. the query's own,
    :func:`scm_signals`) added, as hybrid search computes them before it fuses.
    """
    candidates = list(dict.fromkeys(doc for top in tops.values() for doc in top))
    if isinstance(fusion, AdaptiveFusion):
        read = query_signals(tops)
        read = read if signals is None else read.merged(signals)
        fused = fusion.fuse_legs({name: legs[name] for name in tops}, candidates, signals=read)
    elif isinstance(fusion, ScoreFusion):
        fused = fusion.fuse_legs({name: legs[name] for name in tops}, candidates)
    else:
        fused = fusion.fuse_legs(tops, candidates)
    return _top(fused, depth)


def fusion_row(fusion: Fusion) -> str:
    """A fusion's name in the tables: ``max@0.5``, ``rrf``; with leg weights
    ``zscore[bm25=0.4,scm=0.1,dense=0.5]``."""
    if isinstance(fusion, ScoreFusion) and fusion.weights is not None:
        weights = ",".join(f"{leg}={w:g}" for leg, w in fusion.weights.items())
        return f"{fusion.name}[{weights}]"
    return f"{fusion.name}@{fusion.alpha:g}" if isinstance(fusion, ScoreFusion) else fusion.name


def weight_grid(
    step: float, legs: Sequence[str] = ("bm25", "scm", "dense")
) -> list[dict[str, float]]:
    """Every weighting of ``legs`` in multiples of ``step`` that sums to 1 (a simplex grid;
    0.1 over three legs: 66 weightings), in a fixed order."""
    if not 0.0 < step <= 0.5:
        raise ValueError(f"the weights' step must be in (0, 0.5], got {step}")
    units = round(1.0 / step)
    if abs(units * step - 1.0) > 1e-9:
        raise ValueError(f"the weights' step must divide 1 (0.1, 0.05, 0.25...), got {step}")
    grid = []
    for combination in itertools.product(range(units + 1), repeat=len(legs) - 1):
        last = units - sum(combination)
        if last >= 0:
            values = [*combination, last]
            grid.append({leg: round(v * step, 10) for leg, v in zip(legs, values, strict=True)})
    return grid


def dense_scores(encoder: Any, collection: TestCollection, queries: Sequence[str]) -> DenseScores:
    """Elasticsearch's exact kNN score, (1 + cos) / 2, of every document for every topic, from
    ``encoder``'s vectors (a :class:`~es_scm.encoder.SentenceEncoder`, or a name or folder)."""
    from es_scm.encoder import SentenceEncoder
    from es_scm.index.dense import encode_texts, knn_score

    if not isinstance(encoder, SentenceEncoder):
        encoder = SentenceEncoder(encoder)
    ids = list(collection.documents)
    documents = encode_texts(encoder, list(collection.documents.values())).astype(np.float64)
    topics = encode_texts(encoder, [collection.queries[q] for q in queries]).astype(np.float64)
    cosines = topics @ documents.T  # unit vectors: the cosines
    return DenseScores(ids, dict(zip(queries, knn_score(cosines), strict=True)))


class DenseScores:
    """Every document's dense score for every topic, kept as arrays: ``scores(topic)`` (a
    mapping by document id) and ``top(topic, depth)``."""

    def __init__(self, ids: Sequence[str], rows: Mapping[str, np.ndarray]) -> None:
        self.ids = list(ids)
        self.rows = dict(rows)
        self.position = {doc: n for n, doc in enumerate(self.ids)}

    def scores(self, topic: str) -> Mapping[str, float]:
        return _Row(self.rows[topic], self.position)

    def top(self, topic: str, depth: int) -> dict[str, float]:
        """The topic's ``depth`` best documents, best first, ties by id (as ``_top`` ranks)."""
        row = self.rows[topic]
        if depth < len(row):  # every document scoring at least the depth-th best: ties kept
            kth = np.partition(row, len(row) - depth)[len(row) - depth]
            kept = np.flatnonzero(row >= kth)
        else:
            kept = np.arange(len(row))
        ranked = sorted(((self.ids[i], float(row[i])) for i in kept), key=lambda x: (-x[1], x[0]))
        return dict(ranked[:depth])


class _Row(Mapping[str, float]):
    """One topic's dense scores as a read-only mapping of document id to score."""

    def __init__(self, row: np.ndarray, position: Mapping[str, int]) -> None:
        self.row = row
        self.position = position

    def __getitem__(self, doc: str) -> float:
        return float(self.row[self.position[doc]])

    def __iter__(self) -> Any:
        return iter(self.position)

    def __len__(self) -> int:
        return len(self.position)


def scm_scores(
    model: Any,
    collection: TestCollection,
    queries: Sequence[str],
    signals: dict[str, QuerySignals] | None = None,
) -> Run:
    """Every document's positive SCM for every topic, by the in-memory exact search.

    ``signals``, if given, is filled with each topic's own signals
    (:func:`~es_scm.fusion.signals.term_signals`: its x, x' and the stored y' of the SCM's best
    documents), what hybrid search reads beside the lists' for the ``adaptive`` fusion.
    """
    from es_scm.model.brute_force import BruteForceSearch

    ids = list(collection.documents)
    brute = BruteForceSearch(model, ids, collection.documents.values())
    rows = brute.documents.tocsr() if signals is not None else None
    idf = model.global_weights("query") if signals is not None else None
    runs = {}
    for qid in queries:
        vector = model.query_vector(collection.queries[qid])
        scores = vector.scores(brute.documents)
        positive = np.flatnonzero(scores > 0)
        runs[qid] = {ids[i]: float(scores[i]) for i in positive}
        if signals is not None and rows is not None and idf is not None:
            best = positive[np.lexsort((ids_order(ids, positive), -scores[positive]))][:10]
            stored = [
                (
                    rows.indices[rows.indptr[i] : rows.indptr[i + 1]],
                    rows.data[rows.indptr[i] : rows.indptr[i + 1]],
                )
                for i in best
            ]
            signals[qid] = QuerySignals(term_signals(vector, idf, stored))
    return runs


def ids_order(ids: Sequence[str], rows: np.ndarray) -> np.ndarray:
    """The rank of each document ``rows`` among their ids (ties in a ranking break by id)."""
    return np.argsort(np.argsort(np.array([ids[i] for i in rows], dtype=object), kind="stable"))


def adaptive_runs(
    fusion: AdaptiveFusion,
    legs: Mapping[str, tuple[Mapping[str, Mapping[str, float]], Mapping[str, Mapping[str, float]]]],
    signals: Mapping[str, QuerySignals],
    qrels: Mapping[str, Mapping[str, int]],
    folds: Sequence[Sequence[str]],
    measure: str,
    depth: int,
) -> tuple[Run, AdaptiveFusion]:
    """Fit ``fusion``'s weight model on the topics, cross-validated: each fold's run by the
    model fitted on the other folds, and the fusion fitted on every topic (what ``--out``
    saves).

    Parameters
    ----------
    fusion : AdaptiveFusion
        Its fixed weights are the fit's anchor; the signals read are its model's, else
        :data:`~es_scm.evaluation.adaptive.SIGNALS` of the legs.
    legs : mapping
        Topic → (every leg's scores, each leg's top ``depth``), as :func:`fused_run` takes them.
    signals : mapping
        Topic → its own signals (:func:`scm_scores`); the lists' are computed here.
    qrels, folds, measure, depth
        The judgments, the cross-validation's folds, the measure fitted, the run's depth.
    """
    from es_scm.evaluation.adaptive import (
        PENALTY,
        SIGNALS,
        STEPS_OF_GRID,
        WeightTable,
        fit_weight_model,
    )

    topics = [q for fold in folds for q in fold]
    names = tuple(next(iter(legs.values()))[1])
    step = STEPS_OF_GRID[len(names)]
    grid = weight_grid(step, names)
    base = fusion.base_of(names)
    read = {q: query_signals(legs[q][1]).merged(signals.get(q, QuerySignals())) for q in topics}
    runs = {
        f"grid {n}": {
            q: fused_run(legs[q][0], legs[q][1], fusion_from(base, weights=weights), depth)
            or {"__none__": 0.0}
            for q in topics
        }
        for n, weights in enumerate(grid)
    }
    _, per_query = evaluate_runs({q: qrels[q] for q in topics}, runs, (measure,))
    measures = np.array(
        [
            [per_query[f"grid {n}"].get(q, {}).get(measure, 0.0) for n in range(len(grid))]
            for q in topics
        ]
    )
    model = fusion.model
    wanted = model.signals if model is not None else SIGNALS[tuple(sorted(names))]
    matrix = np.array(
        [[np.nan if read[q].get(n) is None else read[q].get(n) for n in wanted] for q in topics],
        dtype=np.float64,
    ).reshape(len(topics), len(wanted))
    table = WeightTable(
        names,
        step,
        np.array([[w[leg] for leg in names] for w in grid]),
        measures,
        np.zeros(len(topics), dtype=np.int64),
    )
    fixed = dict(zip(names, fusion.weights_of(list(names)), strict=True))
    held_out: Run = {}
    for fold in folds:
        training = np.array([q not in set(fold) for q in topics])
        fitted = fit_weight_model(
            table.subset(training), matrix[training], wanted, fixed, penalty=PENALTY[len(names)]
        )
        fold_fusion = dataclasses.replace(fusion, model=fitted)
        for q in fold:
            held_out[q] = fused_run(legs[q][0], legs[q][1], fold_fusion, depth, read[q])
    whole = fit_weight_model(table, matrix, wanted, fixed, penalty=PENALTY[len(names)])
    return held_out, dataclasses.replace(fusion, model=whole)


def cross_validate(
    per_query: Mapping[str, Mapping[str, float]], folds: Sequence[Sequence[str]]
) -> tuple[dict[str, float], dict[str, Any]]:
    """Held-out score of every row, and the cross-validated estimate of choosing the best row.

    Parameters
    ----------
    per_query : mapping
        Row → topic → the measure (AP by default).
    folds : sequence of topic lists

    Returns
    -------
    (held_out, selected)
        ``held_out[row]`` is the mean over the folds of the row's mean on the fold;
        ``selected`` holds ``score`` (the mean over the folds of the held-out score of the row
        that is best on the other folds) and ``rows`` (the row chosen for each fold).
    """

    def mean_ap(row: str, topics: Sequence[str]) -> float:
        return float(np.mean([per_query[row].get(q, 0.0) for q in topics]))

    held_out = {row: float(np.mean([mean_ap(row, f) for f in folds])) for row in per_query}
    chosen = []
    scores = []
    for number, fold in enumerate(folds):
        training = [q for other, f in enumerate(folds) if other != number for q in f]
        best = max(per_query, key=lambda row: (mean_ap(row, training), -list(per_query).index(row)))
        chosen.append(best)
        scores.append(mean_ap(best, fold))
    return held_out, {"score": float(np.mean(scores)), "rows": chosen}


@dataclass
class TuningReport:
    """Every row's held-out score and gain over BM25, and the cross-validated choice."""

    collection: str
    folds: int
    bm25: float
    held_out: dict[str, float]
    settings: dict[str, dict[str, Any]]
    selected: dict[str, Any] = field(default_factory=dict)
    best: str = ""
    measure: str = "AP"

    def rows(self) -> list[tuple[str, float, float]]:
        """``(row, held-out score, gain over BM25)``, best first."""
        ranked = sorted(self.held_out.items(), key=lambda item: -item[1])
        return [(row, value, value - self.bm25) for row, value in ranked]

    def hybrid(self, row: str | None = None, method: str = "hybrid") -> dict[str, Any] | None:
        """The hybrid settings of the best fusion row of ``row``'s setting (default: the best
        row's), as a model keeps them (:attr:`es_scm.model.SoftCosineModel.hybrid`); None
        without fusion rows. ``method="dense"``: the best three-way fusion (a model keeps it
        under ``hybrid["dense"]``)."""
        setting = self._setting(row or self.best)
        fused = [
            r
            for r in self.held_out
            if self.settings[r]["method"] == method and self._setting(r) == setting
        ]
        if not fused:
            return None
        best = max(fused, key=lambda r: (self.held_out[r], -fused.index(r)))
        return dict(self.settings[best]["fusion"])

    def model_hybrid(self) -> dict[str, Any] | None:
        """What ``es-scm tune --out`` saves as the model's hybrid settings: the best two-way
        fusion, and the best three-way one under ``"dense"`` (None without fusion rows)."""
        two, three = self.hybrid(), self.hybrid(method="dense")
        if two is None and three is None:
            return None
        return {**(two or {}), **({"dense": three} if three else {})}

    def _setting(self, row: str) -> dict[str, Any]:
        return {k: v for k, v in self.settings[row].items() if k not in ("method", "fusion")}

    def reference(self, row: str) -> bool:
        """Whether ``row`` is a reference (``dense``, ``bm25+dense``): reported, never chosen."""
        return self.settings[row]["method"] == "reference"

    def markdown(self) -> str:
        """The table, × 100."""
        label = measure_label(self.measure)
        chosen = self.selected["score"]
        lines = [
            f"{self.collection}: {self.folds}-fold cross-validation over the topics, {label}",
            "",
            f"| setting | held-out {label} | gain over BM25 |",
            "|:---|---:|---:|",
            f"| BM25 | {100 * self.bm25:.2f} | |",
        ]
        lines += [
            f"| {row}{' (reference)' if self.reference(row) else ''} | {100 * v:.2f} | "
            f"{100 * g:+.2f} |"
            for row, v, g in self.rows()
        ]
        lines += [
            "",
            f"tuning by this grid, cross-validated: {label} {100 * chosen:.2f} "
            f"({100 * (chosen - self.bm25):+.2f} over BM25)",
            f"best on all topics: {self.best}",
        ]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "measure": self.measure,
            "folds": self.folds,
            "bm25": self.bm25,
            "held_out": self.held_out,
            "settings": self.settings,
            "selected": self.selected,
            "best": self.best,
        }


def tune(
    client: Any,
    collection: TestCollection,
    grid: Sequence[dict[str, Any]],
    build: ModelFactory,
    *,
    fusions: Sequence[Fusion] = (),
    folds: int = 5,
    depth: int = 100,
    objective: str = "scm",
    measure: str = "AP",
    text_analyzer: str | None = None,
    dense: Any = None,
    dense_fusions: Sequence[Fusion] = (),
) -> TuningReport:
    """Rank the judged topics with every setting; cross-validate; name the best row.

    Parameters
    ----------
    client : Elasticsearch
        For BM25 (an index of the documents is made and deleted).
    collection : TestCollection
    grid : sequence of dict
        The settings (:func:`expand_grid`), each passed to ``build``.
    build : callable
        ``setting -> SoftCosineModel``.
    fusions : sequence of Fusion
        Hybrid rows, one per fusion (:func:`fusion_row` names them; none: SCM rows only).
    folds, depth : int
    objective : {"scm", "hybrid", "dense"}
        Which rows the best (``best``) is chosen among (``dense``: the three-way fusions).
    measure : str
        The ``ir_measures`` measure that scores the rows (``AP``, ``nDCG@10``, ``R@100``, …).
    text_analyzer : str, optional
        BM25's analyzer (``"english"``: stemming and stop words); default ``standard``.
    dense : SentenceEncoder or str, optional
        A sentence encoder (or its name or folder): its vectors are the dense leg of the
        three-way rows (:func:`dense_scores`), and the rows ``dense`` and ``bm25+dense`` are
        reported for reference.
    dense_fusions : sequence of Fusion
        The three-way rows, one per fusion (weights naming the legs: :func:`weight_grid`; or
        RRF), with ``dense``.
    """
    if dense_fusions and dense is None:
        raise ValueError("three-way fusions need the dense leg's encoder (dense=)")
    queries = list(collection.judged_queries())
    parts = folds_of(queries, folds)
    bm25 = bm25_scores(client, collection, size=max(depth, 1000), text_analyzer=text_analyzer)
    bm25_top = {q: _top(bm25[q], depth) for q in queries}
    runs: dict[str, Run] = {"bm25": bm25_top}
    settings: dict[str, dict[str, Any]] = {}
    knn = dense_scores(dense, collection, queries) if dense is not None else None
    knn_top = {q: knn.top(q, depth) for q in queries} if knn is not None else {}
    if knn is not None:
        baseline = fusion_from(BM25_DENSE["fusion"], weights=BM25_DENSE["weights"])
        runs["dense"] = knn_top
        runs["bm25+dense"] = {
            q: fused_run(
                {"bm25": bm25[q], "dense": knn.scores(q)},
                {"bm25": bm25_top[q], "dense": knn_top[q]},
                baseline,
                depth,
            )
            for q in queries
        }
        settings["dense"] = {"method": "reference"}
        settings["bm25+dense"] = {"method": "reference", "fusion": baseline.describe()}
    qrels = {q: collection.qrels[q] for q in queries}
    adaptive = any(isinstance(f, AdaptiveFusion) for f in [*fusions, *dense_fusions])
    for number, setting in enumerate(grid, start=1):
        name = setting_name(setting)
        logger.info("%s: setting %d/%d: %s", collection.name, number, len(grid), name)
        own: dict[str, QuerySignals] | None = {} if adaptive else None
        scm = scm_scores(build(setting), collection, queries, own)
        scm_top = {q: _top(scm[q], depth) for q in queries}
        runs[f"scm {name}"] = scm_top
        settings[f"scm {name}"] = {**setting, "method": "scm"}
        for fusion in fusions:
            row = f"{fusion_row(fusion)} {name}"
            described = fusion.describe()
            if isinstance(fusion, AdaptiveFusion):
                two = {
                    q: ({"bm25": bm25[q], "scm": scm[q]}, {"bm25": bm25_top[q], "scm": scm_top[q]})
                    for q in queries
                }
                runs[row], fitted = adaptive_runs(
                    fusion, two, own or {}, qrels, parts, measure, depth
                )
                described = fitted.describe()
            else:
                runs[row] = {q: hybrid_run(bm25[q], scm[q], fusion, depth) for q in queries}
            settings[row] = {**setting, "method": "hybrid", "fusion": described}
        if dense_fusions:
            assert knn is not None, "checked above"
            legs = {
                q: _candidate_legs(
                    bm25[q],
                    scm[q],
                    knn.scores(q),
                    {"bm25": bm25_top[q], "scm": scm_top[q], "dense": knn_top[q]},
                )
                for q in queries
            }
        for fusion in dense_fusions:
            three = "" if isinstance(fusion, ScoreFusion) else "+dense"  # rrf+dense
            row = f"{fusion_row(fusion)}{three} {name}"
            described = fusion.describe()
            if isinstance(fusion, AdaptiveFusion):
                runs[row], fitted = adaptive_runs(
                    fusion, legs, own or {}, qrels, parts, measure, depth
                )
                described = fitted.describe()
            else:
                runs[row] = {
                    q: fused_run(scores, _legs_of(fusion, tops), fusion, depth)
                    for q, (scores, tops) in legs.items()
                }
            settings[row] = {**setting, "method": "dense", "fusion": described}
    nonempty = {m: {q: d or {"__none__": 0.0} for q, d in r.items()} for m, r in runs.items()}
    _, per_query = evaluate_runs(qrels, nonempty, (measure,))
    values = {row: {q: v[measure] for q, v in per_query[row].items()} for row in runs}
    bm25_values = values.pop("bm25")
    chosen = {row: v for row, v in values.items() if settings[row]["method"] != "reference"}
    held_out, _ = cross_validate(values, parts)
    _, selected = cross_validate(chosen, parts)  # choosing among the grid's rows only
    base, _ = cross_validate({"bm25": bm25_values}, parts)
    candidates = [row for row in chosen if settings[row]["method"] == objective] or list(chosen)
    best = max(candidates, key=lambda row: (held_out[row], -candidates.index(row)))
    return TuningReport(
        collection.name, folds, base["bm25"], held_out, settings, selected, best, measure
    )


def _candidate_legs(
    bm25: Mapping[str, float],
    scm: Mapping[str, float],
    dense: Mapping[str, float],
    tops: dict[str, dict[str, float]],
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """One topic's three legs read once for every three-way fusion of a setting: each leg's
    score of every candidate (the union of the ``tops``; missing: 0), and the ``tops``."""
    candidates = list(dict.fromkeys(doc for top in tops.values() for doc in top))
    scores = {
        name: {c: float(leg.get(c, 0.0)) for c in candidates}
        for name, leg in (("bm25", bm25), ("scm", scm), ("dense", dense))
    }
    return scores, tops


def _legs_of(fusion: Fusion, tops: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """The top lists of the legs ``fusion`` fuses (those its weights name; RRF: every leg)."""
    if isinstance(fusion, ScoreFusion) and fusion.weights is not None:
        return {name: tops[name] for name in fusion.weights}
    return dict(tops)
