"""SemEval-2016/2017 Task 3 subtask B (question–question similarity ranking) through es-scm.

The data is read by :mod:`es_scm.evaluation.semeval_data`.

Task
    Rank each original question's 10 related questions; a question's text is its subject and body
    (as in the gensim SCM notebook). Scores are turned into rankings with the official scorer's
    stable sort over the IR baseline's order (:func:`es_scm.evaluation.metrics.rank_candidates`)
    and scored with its MAP, AvgRec and MRR (:func:`es_scm.evaluation.metrics.semeval_scores`).

Methods (:func:`evaluate`)
    ``ir-baseline``  the official IR baseline (columns 3–4 of the gold file, or RELQ_RANKING_ORDER);
    ``tfidf``        cos(Wx, Wy), the plain cosine of the model's weighted vectors (S = I);
    ``scm``          SCM(x, y) = (Wx)ᵀS(Wy) / (‖Wx‖_S ‖Wy‖_S), computed locally in Python;
    ``es-scm``       the same SCM through Elasticsearch: the related questions are indexed by
                     :class:`es_scm.elastic.SCMIndex`, and each original question's 10 candidates
                     are scored by :meth:`es_scm.elastic.Searcher.rescore` with ``ids=`` — the
                     exact SCM of exactly those documents, from the exact vectors stored in
                     Elasticsearch. (A restricted ``exact`` search would omit the candidates with
                     no expanded term in common, whose SCM is 0; subtask B must rank all 10.)
    ``es-scm-native`` Elasticsearch's own sparse-dot-product score x'ᵀq(y') / ‖Wx‖_S restricted
                     to the 10 ids (9-bit stored values, so ties and small swaps are possible);
    ``es-bm25``      Elasticsearch BM25: a ``match`` query on the ``text`` field, filtered to the
                     ids;
    ``bm25+scm``     hybrid search restricted to the 10 candidates
                     (:meth:`es_scm.elastic.Searcher.hybrid`, an ``ids`` filter):
                     BM25 and the SCM fused by min-max linear interpolation (the default) or
                     reciprocal rank fusion.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from es_scm.evaluation.metrics import (
    average_precision,
    rank_candidates,
    reciprocal_rank,
    semeval_scores,
)
from es_scm.evaluation.semeval_data import OriginalQuestion, clean_text
from es_scm.evaluation.significance import Comparison, compare, comparison_table

__all__ = [
    "BASELINE",
    "METHOD_LABELS",
    "SemEvalReport",
    "build_model",
    "cosine_scores",
    "elasticsearch_scores",
    "evaluate",
    "local_scm_scores",
    "run_all",
]

#: The method every other is compared with, question by question: Elasticsearch's BM25.
BASELINE = "es-bm25"
METHOD_LABELS = {
    "ir-baseline": "IR baseline (official, gold columns 3–4)",
    "tfidf": "TF-IDF cosine (local)",
    "es-bm25": "BM25 (Elasticsearch)",
    "scm": "SCM (local, exact)",
    "es-scm": "SCM (Elasticsearch, exact rescore)",
    "es-scm-native": "SCM (Elasticsearch, native 9-bit scores)",
    "bm25+scm": "BM25 + SCM (hybrid search)",
    "es-dense": "dense (kNN)",
    "bm25+dense": "BM25 + dense (max 0.5)",
    "bm25+scm+dense": "BM25 + SCM + dense (hybrid search)",
    "bm25+scm adaptive": "BM25 + SCM (adaptive fusion)",
    "bm25+scm+dense adaptive": "BM25 + SCM + dense (adaptive fusion)",
}
#: The adaptive fusions ``adaptive=True`` adds, each with the fixed fusion it is compared with
#: (:data:`es_scm.evaluation.trec.ADAPTIVE_METHODS`).
ADAPTIVE_METHODS = {"bm25+scm adaptive": "bm25+scm", "bm25+scm+dense adaptive": "bm25+scm+dense"}
#: With a dense leg (``dense=``): kNN alone, BM25 + kNN fused as a user would (max, 0.5 each)
#: and the three-way hybrid search: the methods of ``eval collection --dense``.
DENSE_METHODS = ("es-dense", "bm25+dense", "bm25+scm+dense")

Scores = dict[str, dict[str, float]]  # question id -> candidate id -> score

# -- scoring ----------------------------------------------------------------------------------


def build_model(questions: Sequence[OriginalQuestion], embeddings: Any = None, **options: Any):
    """A :class:`~es_scm.model.SoftCosineModel` fitted on the questions' texts.

    The vocabulary and document frequencies come from every original and related question
    (subject + body, :func:`clean_text`); ``options`` go to :meth:`SoftCosineModel.build`.
    """
    from es_scm.model import SoftCosineModel

    return SoftCosineModel.build(corpus_texts(questions), embeddings, **options)


def corpus_texts(questions: Sequence[OriginalQuestion]) -> list[str]:
    """The texts the vocabulary is fitted on: every original and related question, cleaned."""
    texts = [clean_text(q.text) for q in questions]
    texts += [clean_text(r.text) for q in questions for r in q.related]
    return texts


def _vectors(model: Any, questions: Sequence[OriginalQuestion]) -> tuple[Any, Any]:
    queries = model.vectorize_many([clean_text(q.text) for q in questions], role="query")
    documents = model.vectorize_many(
        [clean_text(r.text) for q in questions for r in q.related], role="document"
    )
    return sp.csr_matrix(queries), sp.csr_matrix(documents)


def _per_question(questions: Sequence[OriginalQuestion], values: np.ndarray) -> Scores:
    scores: Scores = {}
    position = 0
    for row, question in enumerate(questions):
        scores[question.id] = {}
        for related in question.related:
            scores[question.id][related.id] = float(values[row, position])
            position += 1
    return scores


def cosine_scores(model: Any, questions: Sequence[OriginalQuestion]) -> Scores:
    """cos(Wx, Wy): the SCM with S = I, the plain cosine of the model's weighted vectors."""
    from es_scm.similarity import TermSimilarityMatrix

    queries, documents = _vectors(model, questions)
    identity = TermSimilarityMatrix.identity(model.terms)
    values = identity.inner_product(queries, documents, normalized=(True, True))
    return _per_question(questions, np.atleast_2d(values))


def local_scm_scores(model: Any, questions: Sequence[OriginalQuestion]) -> Scores:
    """SCM(x, y) = (Wx)ᵀS(Wy) / (√((Wx)ᵀS(Wx)) √((Wy)ᵀS(Wy))) for every question–candidate pair."""
    queries, documents = _vectors(model, questions)
    values = model.similarity_matrix.inner_product(queries, documents, normalized=(True, True))
    return _per_question(questions, np.atleast_2d(values))


def elasticsearch_scores(
    client: Any,
    model: Any,
    questions: Sequence[OriginalQuestion],
    *,
    index_name: str | None = None,
    keep_index: bool = False,
    hybrids: Mapping[str, Mapping[str, Any]] | None = None,
    text_analyzer: str | None = None,
    dense: Any = None,
    dense_hybrid: Mapping[str, Any] | None = None,
    adaptive: bool = False,
) -> dict[str, Scores]:
    """Index the related questions and score them through Elasticsearch.

    ``hybrids`` maps a method name to hybrid options (``fusion``, ``alpha``, ``rrf_k``); default
    ``{"bm25+scm": {}}``, the model's (or the default) fusion. ``text_analyzer`` is the BM25
    field's analyzer (e.g. ``"english"``; default ``standard``). ``dense`` (a
    :class:`~es_scm.options.DenseOptions`) also indexes the encoder's vectors and scores the
    :data:`DENSE_METHODS`, the three-way hybrid with ``dense_hybrid`` (default: the model's
    three-way fusion, else the defaults). ``adaptive`` adds the adaptive fusion of each hybrid
    (:data:`~es_scm.evaluation.trec.ADAPTIVE_METHODS`).

    Returns
    -------
    dict
        ``{"es-scm": …, "es-scm-native": …, "es-bm25": …, <hybrid methods>: …}`` (see the
        module docstring). The index (``es-scm-eval-semeval-<random>`` unless named) is deleted
        afterwards unless ``keep_index``.
    """
    from es_scm.elastic import SCMIndex
    from es_scm.evaluation.trec import BM25_DENSE, adaptive_methods, method_fusion

    name = index_name or f"es-scm-eval-semeval-{uuid.uuid4().hex[:10]}"
    index = SCMIndex(client, name, model)
    documents = [
        {"id": r.id, "text": clean_text(r.text), "orgq": q.id} for q in questions for r in q.related
    ]
    try:
        index.create(text_analyzer=text_analyzer, dense=dense)
        report = index.index_documents(documents, batch_size=500)
        if not report.ok:
            raise RuntimeError(f"indexing failed: {report.summary()}: {report.failures[:3]}")
        searcher = index.searcher
        hybrids = {"bm25+scm": {}} if hybrids is None else dict(hybrids)
        if dense is not None:  # the two fusions with a dense leg (kNN alone: its own method)
            hybrids["bm25+dense"] = {**BM25_DENSE, "dense": True}
            hybrids["bm25+scm+dense"] = {**(dense_hybrid or {}), "dense": True}
        if adaptive:
            pairs = adaptive_methods(hybrids)
            hybrids.update({m: {**hybrids[f], "fusion": "adaptive"} for m, f in pairs.items()})
        fusions = {  # method -> (its fusion, whether it has the dense leg, its SCM leg)
            method: (
                method_fusion(model.hybrid, options),
                bool(options.get("dense")),
                options.get("neighbours"),
            )
            for method, options in hybrids.items()
        }
        exact: Scores = {}
        native: Scores = {}
        bm25: Scores = {}
        fused: dict[str, Scores] = {method: {} for method in hybrids}
        if dense is not None:
            fused["es-dense"] = {}
        for question in questions:
            ids = question.candidate_ids
            query = clean_text(question.text)
            result = searcher.rescore(query, ids=ids)
            exact[question.id] = {hit.id: hit.score for hit in result.hits}
            ids_filter = {"ids": {"values": ids}}
            result = searcher.native(query, len(ids), filter=ids_filter)
            native[question.id] = {hit.id: hit.score for hit in result.hits}  # = native_score
            result = searcher.bm25(query, len(ids), filter=ids_filter)
            bm25[question.id] = {hit.id: hit.score for hit in result.hits}
            if dense is not None:
                result = searcher.dense(query, len(ids), filter=ids_filter)
                fused["es-dense"][question.id] = {hit.id: hit.score for hit in result.hits}
            for method, (fusion, with_dense, neighbours) in fusions.items():
                result = searcher.hybrid(
                    query,
                    len(ids),
                    filter=ids_filter,
                    fusion=fusion,
                    depth=len(ids),
                    dense=True if with_dense else None,
                    neighbours=neighbours,
                )
                fused[method][question.id] = {hit.id: hit.score for hit in result.hits}
        return {"es-scm": exact, "es-scm-native": native, "es-bm25": bm25, **fused}
    finally:
        if not keep_index:
            index.delete()


# -- evaluation -------------------------------------------------------------------------------


@dataclass
class SemEvalReport:
    """Scores of every method, and per question its rankings, AP and reciprocal rank."""

    methods: dict[str, dict[str, float]]
    per_question: dict[str, dict[str, Any]]
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    #: Method → another method it is also compared with (an adaptive fusion → its fixed one).
    pairs: dict[str, str] = field(default_factory=dict)

    def _values(self) -> dict[str, dict[str, float]]:
        values: dict[str, dict[str, float]] = {}
        for qid, details in self.per_question.items():
            for method, scores in details["methods"].items():
                values.setdefault(method, {})[qid] = float(scores["AP"])
        return values

    def comparisons(self, baseline: str = BASELINE) -> list[Comparison]:
        """Every method against ``baseline`` (BM25 through Elasticsearch) on each question's AP,
        the official MAP's summands (:func:`~es_scm.evaluation.significance.compare`); none
        when the baseline was not run."""
        values = self._values()
        if baseline not in values:
            return []
        return compare(values, baseline, measure="AP")

    def pair_comparisons(self) -> list[Comparison]:
        """Each method of :attr:`pairs` against its other method, question by question (AP)."""
        values = self._values()
        return [
            comparison
            for method, other in self.pairs.items()
            if method in values and other in values
            for comparison in compare(
                {other: values[other], method: values[method]}, other, measure="AP"
            )
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "settings": self.settings,
            "methods": self.methods,
            "seconds": self.seconds,
            "questions": len(self.per_question),
            "comparisons": [c.to_dict() for c in self.comparisons()],
            **(
                {"pair_comparisons": [c.to_dict() for c in self.pair_comparisons()]}
                if self.pairs
                else {}
            ),
        }

    def significance_markdown(self) -> str:
        """Each method against BM25, question by question (AP): Δ MAP, p-values, W/T/L."""
        comparisons = self.comparisons()
        if not comparisons:
            return ""
        comparisons += self.pair_comparisons()
        return comparison_table(comparisons, "SemEval", labels=METHOD_LABELS)

    def markdown(self) -> str:
        """The MAP / AvgRec / MRR table (× 100), in the methods' order."""
        lines = ["| method | MAP | AvgRec | MRR |", "|:---|---:|---:|---:|"]
        for method, scores in self.methods.items():
            label = METHOD_LABELS.get(method, method)
            lines.append(
                f"| {label} | {scores['MAP']:.2f} | {scores['AvgRec']:.2f} | {scores['MRR']:.2f} |"
            )
        return "\n".join(lines)

    def write_json(self, path: str | Path, provenance: Mapping[str, Any] | None = None) -> None:
        """Write :meth:`to_dict` as JSON, after ``provenance`` (:mod:`.provenance`) if given."""
        from es_scm.evaluation.provenance import KEY

        report = {KEY: dict(provenance)} if provenance is not None else {}
        report.update(self.to_dict())
        Path(path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")

    def write_per_question(
        self, path: str | Path, provenance: Mapping[str, Any] | None = None
    ) -> None:
        """Write the questions' details as JSON keyed by question id.

        ``provenance``, if given, is under ``"_provenance"``, a key no question id takes.
        """
        from es_scm.evaluation.provenance import KEYED_FILE_KEY

        report = {KEYED_FILE_KEY: dict(provenance)} if provenance is not None else {}
        report.update(self.per_question)
        Path(path).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")


def rankings_from_scores(
    questions: Sequence[OriginalQuestion], scores: Mapping[str, Mapping[str, float]]
) -> dict[str, list[str]]:
    """Rank each question's candidates by score, ties in the IR baseline's (gold file) order."""
    return {q.id: rank_candidates(q.candidate_ids, scores.get(q.id, {})) for q in questions}


def evaluate(
    questions: Sequence[OriginalQuestion],
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    settings: Mapping[str, Any] | None = None,
    seconds: Mapping[str, float] | None = None,
) -> SemEvalReport:
    """Score every run with the official MAP, AvgRec and MRR; keep per-question details.

    Parameters
    ----------
    questions : sequence of OriginalQuestion
    runs : mapping
        ``method -> question id -> candidate id -> score`` (missing candidates score 0).
    """
    methods: dict[str, dict[str, float]] = {}
    per_question: dict[str, dict[str, Any]] = {
        q.id: {"relevant": [r.id for r in q.related if r.relevant], "methods": {}}
        for q in questions
    }
    for method, scores in runs.items():
        rankings = rankings_from_scores(questions, scores)
        labels = {q.id: q.labels(rankings[q.id]) for q in questions}
        methods[method] = semeval_scores(labels)
        for q in questions:
            per_question[q.id]["methods"][method] = {
                "ranking": rankings[q.id],
                "scores": [float(scores.get(q.id, {}).get(c, 0.0)) for c in rankings[q.id]],
                "AP": average_precision(labels[q.id]),
                "RR": reciprocal_rank(labels[q.id]),
            }
    return SemEvalReport(methods, per_question, dict(settings or {}), dict(seconds or {}))


def ir_baseline_scores(questions: Sequence[OriginalQuestion]) -> Scores:
    """The official IR baseline's scores (gold column 4, or 1 / RELQ_RANKING_ORDER)."""
    return {q.id: {r.id: r.ir_score for r in q.related} for q in questions}


def run_all(
    questions: Sequence[OriginalQuestion],
    model: Any,
    *,
    client: Any = None,
    hybrids: Mapping[str, Mapping[str, Any]] | None = None,
    index_name: str | None = None,
    keep_index: bool = False,
    settings: Mapping[str, Any] | None = None,
    text_analyzer: str | None = None,
    dense: Any = None,
    dense_hybrid: Mapping[str, Any] | None = None,
    adaptive: bool = False,
) -> SemEvalReport:
    """Run every method (the Elasticsearch ones when ``client`` is given; with ``dense``, the
    :data:`DENSE_METHODS` too; with ``adaptive``, the adaptive fusion of each hybrid, each also
    compared with its fixed fusion) and evaluate them."""
    runs: dict[str, Scores] = {}
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    runs["ir-baseline"] = ir_baseline_scores(questions)
    runs["tfidf"] = cosine_scores(model, questions)
    seconds["tfidf"] = time.perf_counter() - started
    started = time.perf_counter()
    scm = local_scm_scores(model, questions)
    seconds["scm"] = time.perf_counter() - started
    if client is not None:
        started = time.perf_counter()
        hybrids = {"bm25+scm": {}} if hybrids is None else dict(hybrids)
        es_runs = elasticsearch_scores(
            client,
            model,
            questions,
            index_name=index_name,
            keep_index=keep_index,
            hybrids=hybrids,
            text_analyzer=text_analyzer,
            dense=dense,
            dense_hybrid=dense_hybrid,
            adaptive=adaptive,
        )
        seconds["elasticsearch"] = time.perf_counter() - started
        runs["es-bm25"] = es_runs["es-bm25"]
        runs["scm"] = scm
        runs["es-scm"] = es_runs["es-scm"]
        runs["es-scm-native"] = es_runs["es-scm-native"]
        runs.update({method: es_runs[method] for method in hybrids})
        runs.update({method: es_runs[method] for method in DENSE_METHODS if method in es_runs})
        pairs = {m: f for m, f in ADAPTIVE_METHODS.items() if m in es_runs}
        runs.update({method: es_runs[method] for method in pairs})
    else:
        runs["scm"] = scm
        pairs = {}
    report = evaluate(questions, runs, settings=settings, seconds=seconds)
    report.pairs = pairs
    return report
