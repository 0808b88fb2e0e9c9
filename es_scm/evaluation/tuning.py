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
    top ``depth`` lists.

Rows are scored by one ``ir_measures`` measure (``measure``: ``AP`` over the ranked ``depth`` by
default; ``nDCG@10``, ``R@100``, …). The topics are split into ``folds`` folds (round robin over
the sorted ids). A row's held-out score is the mean over the folds of its mean on the fold; its
gain is that minus BM25's. The cross-validated estimate of *tuning*
(:attr:`TuningReport.selected`) picks, for every fold, the row with the best score on the other
folds and scores it on the fold: what choosing by this grid is worth on unseen topics.
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
from es_scm.evaluation.trec import Run, evaluate_runs, measure_label
from es_scm.fusion import Fusion, MaxFusion, ScoreFusion

__all__ = [
    "TuningReport",
    "bm25_scores",
    "cross_validate",
    "expand_grid",
    "folds_of",
    "fusion_row",
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


def bm25_scores(
    client: Any, collection: TestCollection, size: int, text_analyzer: str | None = None
) -> dict[str, dict[str, float]]:
    """Elasticsearch's BM25 of every judged topic: its top ``size`` documents and their scores.

    The documents are indexed once, with es-scm's text field (the analyzer of hybrid search:
    ``text_analyzer``, default ``standard``), in a temporary index that is deleted afterwards.
    """
    from es_scm.elastic import SCMIndex
    from es_scm.elastic.query import bm25_query
    from es_scm.model import SoftCosineModel

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
) -> dict[str, float]:
    """``fusion`` over the union of both top ``depth`` lists, as hybrid search fuses them.

    ``bm25`` and ``scm`` hold every score known (a candidate missing from ``bm25`` scores 0);
    a float is the α of the default fusion (``max``).
    """
    if not isinstance(fusion, Fusion):
        fusion = MaxFusion(float(fusion))
    bm25_top, scm_top = _top(bm25, depth), _top(scm, depth)
    candidates = list(dict.fromkeys([*bm25_top, *scm_top]))
    if isinstance(fusion, ScoreFusion):
        fused = fusion.fuse(bm25, scm, candidates)
    else:
        fused = fusion.fuse(bm25_top, scm_top, candidates)
    return _top(fused, depth)


def fusion_row(fusion: Fusion) -> str:
    """A fusion's name in the tables: ``max@0.5``, ``rrf``."""
    return f"{fusion.name}@{fusion.alpha:g}" if isinstance(fusion, ScoreFusion) else fusion.name


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

    def hybrid(self, row: str | None = None) -> dict[str, Any] | None:
        """The hybrid settings of the best fusion row of ``row``'s setting (default: the best
        row's), as a model keeps them (:attr:`es_scm.model.SoftCosineModel.hybrid`); None
        without fusion rows."""
        setting = self._setting(row or self.best)
        fused = [
            r
            for r in self.held_out
            if self.settings[r]["method"] == "hybrid" and self._setting(r) == setting
        ]
        if not fused:
            return None
        best = max(fused, key=lambda r: (self.held_out[r], -fused.index(r)))
        return dict(self.settings[best]["fusion"])

    def _setting(self, row: str) -> dict[str, Any]:
        return {k: v for k, v in self.settings[row].items() if k not in ("method", "fusion")}

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
        lines += [f"| {row} | {100 * v:.2f} | {100 * g:+.2f} |" for row, v, g in self.rows()]
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
    objective : {"scm", "hybrid"}
        Which rows the best (``best``) is chosen among.
    measure : str
        The ``ir_measures`` measure that scores the rows (``AP``, ``nDCG@10``, ``R@100``, …).
    text_analyzer : str, optional
        BM25's analyzer (``"english"``: stemming and stop words); default ``standard``.
    """
    queries = list(collection.judged_queries())
    parts = folds_of(queries, folds)
    bm25 = bm25_scores(client, collection, size=max(depth, 1000), text_analyzer=text_analyzer)
    runs: dict[str, Run] = {"bm25": {q: _top(bm25[q], depth) for q in queries}}
    settings: dict[str, dict[str, Any]] = {}
    for number, setting in enumerate(grid, start=1):
        name = setting_name(setting)
        logger.info("%s: setting %d/%d: %s", collection.name, number, len(grid), name)
        scm = scm_scores(build(setting), collection, queries)
        runs[f"scm {name}"] = {q: _top(scm[q], depth) for q in queries}
        settings[f"scm {name}"] = {**setting, "method": "scm"}
        for fusion in fusions:
            row = f"{fusion_row(fusion)} {name}"
            runs[row] = {q: hybrid_run(bm25[q], scm[q], fusion, depth) for q in queries}
            settings[row] = {**setting, "method": "hybrid", "fusion": fusion.describe()}
    qrels = {q: collection.qrels[q] for q in queries}
    nonempty = {m: {q: d or {"__none__": 0.0} for q, d in r.items()} for m, r in runs.items()}
    _, per_query = evaluate_runs(qrels, nonempty, (measure,))
    values = {row: {q: v[measure] for q, v in per_query[row].items()} for row in runs}
    bm25_values = values.pop("bm25")
    held_out, selected = cross_validate(values, parts)
    base, _ = cross_validate({"bm25": bm25_values}, parts)
    candidates = [row for row in held_out if settings[row]["method"] == objective] or list(values)
    best = max(candidates, key=lambda row: (held_out[row], -candidates.index(row)))
    return TuningReport(
        collection.name, folds, base["bm25"], held_out, settings, selected, best, measure
    )
