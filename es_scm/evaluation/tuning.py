"""Tune the model on your own collection: a grid of options, k-fold cross-validation over topics.

For every setting of the grid (embeddings, ``nonzero_limit``, ``threshold``, ``exponent``,
``dominant``, ``weighting``, …) a model is built on the collection's documents and every topic is
ranked by

``scm``
    the exact SCM, computed in memory (:class:`~es_scm.model.brute_force.BruteForceSearch`: the
    ranking that ``exact`` search through Elasticsearch returns, by its guarantee);
``hybrid@α``
    BM25 (Elasticsearch's, on an index of the documents) fused with the SCM by min-max linear
    interpolation with weight α on BM25 (:func:`es_scm.fusion.interpolate_scores`, the formula of
    hybrid search), over the union of both top ``depth`` lists.

The topics are split into ``folds`` folds (round robin over the sorted ids). A row's held-out MAP
is the mean over the folds of its MAP on the fold; its gain is that minus BM25's. The
cross-validated estimate of *tuning* (:attr:`TuningReport.selected`) picks, for every fold, the
row with the best MAP on the other folds and scores it on the fold: what choosing by this grid
is worth on unseen topics.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from es_scm.evaluation.collections import TestCollection
from es_scm.evaluation.trec import Run, evaluate_runs
from es_scm.fusion import interpolate_scores

__all__ = [
    "TuningReport",
    "bm25_scores",
    "cross_validate",
    "expand_grid",
    "folds_of",
    "hybrid_run",
    "scm_scores",
    "setting_name",
    "tune",
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


def bm25_scores(client: Any, collection: TestCollection, size: int) -> dict[str, dict[str, float]]:
    """Elasticsearch's BM25 of every judged topic: its top ``size`` documents and their scores.

    The documents are indexed once, with es-scm's text field (the analyzer of hybrid search),
    in a temporary index that is deleted afterwards.
    """
    from es_scm.elastic import SCMIndex
    from es_scm.elastic.schema import TEXT_FIELD
    from es_scm.model import SoftCosineModel

    name = f"es-scm-tune-{collection.name.lower()}-{uuid.uuid4().hex[:10]}"
    index = SCMIndex(client, name, SoftCosineModel.build(collection.documents.values()))
    try:
        docs = ({"id": d, "text": t} for d, t in collection.documents.items())
        report = index.index_documents(docs, batch_size=500)
        if not report.ok:
            raise RuntimeError(f"indexing failed: {report.summary()}")
        client.indices.refresh(index=name)
        scores = {}
        for qid, text in collection.judged_queries().items():
            query = {"match": {TEXT_FIELD: text}}
            hits = client.search(index=name, query=query, size=size, source=False)["hits"]["hits"]
            scores[qid] = {hit["_id"]: float(hit["_score"]) for hit in hits}
        return scores
    finally:
        index.delete()


def _top(scores: Mapping[str, float], depth: int) -> dict[str, float]:
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return dict(ranked[:depth])


def hybrid_run(
    bm25: Mapping[str, float], scm: Mapping[str, float], alpha: float, depth: int
) -> dict[str, float]:
    """Linear fusion over the union of both top ``depth`` lists; missing BM25 scores are 0."""
    candidates = list(dict.fromkeys([*_top(bm25, depth), *_top(scm, depth)]))
    bm25_side = {c: bm25.get(c, 0.0) for c in candidates}
    scm_side = {c: scm.get(c, 0.0) for c in candidates}
    return _top(interpolate_scores(bm25_side, scm_side, alpha, candidates), depth)


def scm_scores(model: Any, collection: TestCollection, queries: Sequence[str]) -> Run:
    """Every document's positive SCM for every topic, by the in-memory exact search."""
    from es_scm.model.brute_force import BruteForceSearch

    ids = list(collection.documents)
    brute = BruteForceSearch(model, ids, collection.documents.values())
    runs = {}
    for qid in queries:
        scores = brute.scores(collection.queries[qid])
        positive = np.flatnonzero(scores > 0)
        runs[qid] = {ids[i]: float(scores[i]) for i in positive}
    return runs


def cross_validate(
    per_query: Mapping[str, Mapping[str, float]], folds: Sequence[Sequence[str]]
) -> tuple[dict[str, float], dict[str, Any]]:
    """Held-out MAP of every row, and the cross-validated estimate of choosing the best row.

    Parameters
    ----------
    per_query : mapping
        Row → topic → AP.
    folds : sequence of topic lists

    Returns
    -------
    (held_out, selected)
        ``held_out[row]`` is the mean over the folds of the row's MAP on the fold;
        ``selected`` holds ``map`` (the mean over the folds of the held-out MAP of the row that is
        best on the other folds) and ``rows`` (the row chosen for each fold).
    """

    def mean_ap(row: str, topics: Sequence[str]) -> float:
        return float(np.mean([per_query[row].get(q, 0.0) for q in topics]))

    held_out = {row: float(np.mean([mean_ap(row, f) for f in folds])) for row in per_query}
    chosen, scores = [], []
    for number, fold in enumerate(folds):
        training = [q for other, f in enumerate(folds) if other != number for q in f]
        best = max(per_query, key=lambda row: (mean_ap(row, training), -list(per_query).index(row)))
        chosen.append(best)
        scores.append(mean_ap(best, fold))
    return held_out, {"map": float(np.mean(scores)), "rows": chosen}


@dataclass
class TuningReport:
    """Every row's held-out MAP and gain over BM25, and the cross-validated choice."""

    collection: str
    folds: int
    bm25: float
    held_out: dict[str, float]
    settings: dict[str, dict[str, Any]]
    selected: dict[str, Any] = field(default_factory=dict)
    best: str = ""

    def rows(self) -> list[tuple[str, float, float]]:
        """``(row, held-out MAP, gain over BM25)``, best first."""
        ranked = sorted(self.held_out.items(), key=lambda item: -item[1])
        return [(row, value, value - self.bm25) for row, value in ranked]

    def markdown(self) -> str:
        """The table, × 100."""
        lines = [
            f"{self.collection}: {self.folds}-fold cross-validation over the topics",
            "",
            "| setting | held-out MAP | gain over BM25 |",
            "|:---|---:|---:|",
            f"| BM25 | {100 * self.bm25:.2f} | |",
        ]
        lines += [f"| {row} | {100 * v:.2f} | {100 * g:+.2f} |" for row, v, g in self.rows()]
        lines += [
            "",
            f"tuning by this grid, cross-validated: MAP {100 * self.selected['map']:.2f} "
            f"({100 * (self.selected['map'] - self.bm25):+.2f} over BM25)",
            f"best on all topics: {self.best}",
        ]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
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
    alphas: Sequence[float] = (),
    folds: int = 5,
    depth: int = 100,
    objective: str = "scm",
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
    alphas : sequence of float
        Hybrid rows ``hybrid@α`` for each α (none: SCM rows only).
    folds, depth : int
    objective : {"scm", "hybrid"}
        Which rows the best (``best``) is chosen among.
    """
    queries = list(collection.judged_queries())
    parts = folds_of(queries, folds)
    bm25 = bm25_scores(client, collection, size=max(depth, 1000))
    runs: dict[str, Run] = {"bm25": {q: _top(bm25[q], depth) for q in queries}}
    settings: dict[str, dict[str, Any]] = {}
    for number, setting in enumerate(grid, start=1):
        name = setting_name(setting)
        logger.info("%s: setting %d/%d: %s", collection.name, number, len(grid), name)
        scm = scm_scores(build(setting), collection, queries)
        runs[f"scm {name}"] = {q: _top(scm[q], depth) for q in queries}
        settings[f"scm {name}"] = {**setting, "method": "scm"}
        for alpha in alphas:
            row = f"hybrid@{alpha:g} {name}"
            runs[row] = {q: hybrid_run(bm25[q], scm[q], alpha, depth) for q in queries}
            settings[row] = {**setting, "method": "hybrid", "alpha": alpha}
    qrels = {q: collection.qrels[q] for q in queries}
    nonempty = {m: {q: d or {"__none__": 0.0} for q, d in r.items()} for m, r in runs.items()}
    _, per_query = evaluate_runs(qrels, nonempty, ("AP",))
    ap = {row: {q: values["AP"] for q, values in per_query[row].items()} for row in runs}
    bm25_ap = ap.pop("bm25")
    held_out, selected = cross_validate(ap, parts)
    base, _ = cross_validate({"bm25": bm25_ap}, parts)
    candidates = [row for row in held_out if settings[row]["method"] == objective] or list(ap)
    best = max(candidates, key=lambda row: (held_out[row], -candidates.index(row)))
    return TuningReport(collection.name, folds, base["bm25"], held_out, settings, selected, best)
