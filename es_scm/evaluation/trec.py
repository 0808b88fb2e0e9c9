"""TREC-style evaluation on the classic collections (Cranfield, CISI, CACM) through Elasticsearch.

Methods (:func:`run_collection`), each retrieving the top ``depth`` documents per query:

``bm25``      Elasticsearch's BM25: a ``match`` query on the indexed ``text`` field.
``scm``       :meth:`es_scm.elastic.Searcher.search` (exact search): native retrieval through the
              expanded query x' = SᵀWx, then the exact SCM, provably equal to the brute-force top
              ``depth`` (see :mod:`es_scm.search.exact`).
``bm25+scm``  hybrid search (:meth:`es_scm.elastic.Searcher.hybrid`):
              BM25's and the SCM's top ``depth`` fused (the model's fusion, else the default;
              see :mod:`es_scm.search.hybrid.legs`).

With dense vectors (``dense=``: the index made with a sentence encoder's vectors, or an existing
index's own), three more:

``dense``           Elasticsearch's kNN search alone (:meth:`es_scm.elastic.Searcher.dense`).
``bm25+dense``      BM25 and kNN fused by ``max`` with weight 0.5 each: the baseline a user would
                    configure with a small encoder (:data:`BM25_DENSE`).
``bm25+scm+dense``  the three-way hybrid search (the model's three-way fusion, else
                    :data:`~es_scm.options.defaults.HYBRID_DENSE_DEFAULTS`).

With ``adaptive=True``, the ``adaptive`` fusion of each hybrid (:data:`ADAPTIVE_METHODS`:
``bm25+scm adaptive``, and ``bm25+scm+dense adaptive`` with dense vectors): per-query weights
from the query's signals (:class:`es_scm.fusion.AdaptiveFusion`; the model's own adaptive
fusion, saved by ``es-scm tune``, else es-scm's), each also compared with the fixed fusion it
adapts, query by query (:attr:`TrecReport.pairs`).

MAP (AP over the retrieved ``depth``), nDCG@10 and R@100 (:data:`MEASURES`, or any other
``ir_measures`` measures: :func:`check_measures`) are computed by ``ir_measures`` (pytrec_eval
underneath) over the judged queries — those with at least one relevant document. Graded gains
(Cranfield) feed nDCG; AP and recall count any positive grade as relevant.

Runs made elsewhere (a dense retriever's, another system's: TREC run files, :func:`read_trec_run`)
are evaluated beside es-scm's methods, and every method is compared with the baseline, BM25 on
the same index, query by query (:mod:`es_scm.evaluation.significance`: wins/ties/losses, the
paired randomization test and the paired t-test).
"""

from __future__ import annotations

import json
import logging
import math
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from es_scm.extras import require
from es_scm.files import open_text
from es_scm.options import DenseOptions
from es_scm.progress import Progress

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.evaluation.significance import Comparison

__all__ = [
    "ADAPTIVE_METHODS",
    "BASELINE",
    "BM25_DENSE",
    "MEASURES",
    "TrecReport",
    "adaptive_methods",
    "check_measures",
    "evaluate_runs",
    "measure_label",
    "method_fusion",
    "read_collection_files",
    "read_trec_run",
    "run_collection",
    "trec_run_lines",
    "write_trec_run",
]

MEASURES = ("AP", "nDCG@10", "R@100")
#: The method every other is compared with: BM25 on the same index (its text field's analyzer).
BASELINE = "bm25"
logger = logging.getLogger(__name__)
_BATCH = 100  # queries of one batch_search of an evaluation

METHOD_LABELS = {
    "bm25": "BM25 (Elasticsearch)",
    "scm": "SCM (Elasticsearch, exact)",
    "bm25+scm": "BM25 + SCM (hybrid search)",
    "dense": "dense (kNN)",
    "bm25+dense": "BM25 + dense (max 0.5)",
    "bm25+scm+dense": "BM25 + SCM + dense (hybrid search)",
    "bm25+scm adaptive": "BM25 + SCM (adaptive fusion)",
    "bm25+scm+dense adaptive": "BM25 + SCM + dense (adaptive fusion)",
}
#: The adaptive fusions an evaluation may add, each with the fixed fusion it is compared with.
ADAPTIVE_METHODS = {"bm25+scm adaptive": "bm25+scm", "bm25+scm+dense adaptive": "bm25+scm+dense"}
#: The fusion of BM25 and kNN alone that ``bm25+dense`` evaluates: each leg divided by its
#: largest score among the candidates, weight 0.5 each (what the issue's baseline measured).
BM25_DENSE: dict[str, Any] = {"fusion": "max", "weights": {"bm25": 0.5, "dense": 0.5}}

Run = dict[str, dict[str, float]]  # query id -> document id -> score
_EXAMPLES = "e.g. AP, AP@100, nDCG@10, R@1000, P@10, RR"


def check_measures(measures: Sequence[str]) -> list[str]:
    """The ``ir_measures`` names of ``measures`` (``"nDCG@10"``), each checked, duplicates dropped.

    Raises
    ------
    ValueError
        One line naming the first measure that ``ir_measures`` does not know or cannot compute.
    """
    ir_measures = require("ir_measures", "evaluation measures")

    names: list[str] = []
    for text in measures:
        try:
            measure = ir_measures.parse_measure(text)
        except (NameError, ValueError, SyntaxError) as error:
            reason = "unknown measure" if isinstance(error, NameError) else "cannot parse it"
            raise ValueError(f"measure {text!r}: {reason} ({_EXAMPLES})") from None
        cutoff = measure.params.get("cutoff")
        # pytrec_eval aborts the process on a cutoff below 1 instead of raising
        if cutoff is not None and not (isinstance(cutoff, int) and cutoff >= 1):
            raise ValueError(f"measure {text!r}: the cutoff must be a whole number of at least 1")
        try:  # a measure can parse and still lack a provider, or a valid parameter
            ir_measures.calc_aggregate([measure], {"1": {"d1": 1}}, {"1": {"d1": 1.0}})
        except Exception as error:
            reason = " ".join(str(error).split())[:160]
            message = f"measure {text!r}: ir_measures cannot compute it ({reason})"
            raise ValueError(message) from None
        if str(measure) not in names:
            names.append(str(measure))
    if not names:
        raise ValueError(f"no measures given ({_EXAMPLES})")
    return names


def measure_label(measure: str) -> str:
    """A measure's column in the tables: the mean of AP is MAP (``AP@100`` → ``MAP@100``)."""
    return "M" + measure if measure == "AP" or measure.startswith(("AP@", "AP(")) else measure


def _cutoff(measure: str) -> int:
    """The rank a measure looks down to (0: none)."""
    parsed = require("ir_measures", "evaluation measures").parse_measure(measure)
    return int(parsed.params.get("cutoff") or 0)


def _is_count(measure: str) -> bool:
    return measure.startswith(("Num", "num_"))


def evaluate_runs(
    qrels: Mapping[str, Mapping[str, int]],
    runs: Mapping[str, Run],
    measures: Sequence[str] = MEASURES,
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, dict[str, float]]]]:
    """Aggregate and per-query measures of every run, by ``ir_measures``.

    Returns
    -------
    (aggregate, per_query)
        ``aggregate[method][measure]`` and ``per_query[method][query][measure]``.
    """
    ir_measures = require("ir_measures", "evaluation measures")

    parsed = [ir_measures.parse_measure(m) for m in measures]
    qrels = {q: dict(docs) for q, docs in qrels.items()}
    aggregate: dict[str, dict[str, float]] = {}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    for method, run in runs.items():
        values = ir_measures.calc_aggregate(parsed, qrels, run)
        aggregate[method] = {str(m): float(values[m]) for m in parsed}
        details: dict[str, dict[str, float]] = {}
        for metric in ir_measures.iter_calc(parsed, qrels, run):
            details.setdefault(metric.query_id, {})[str(metric.measure)] = float(metric.value)
        per_query[method] = details
    return aggregate, per_query


def read_trec_run(path: str | Path) -> Run:
    """A run in TREC format (``qid Q0 docid rank score tag``, white space between the columns).

    The scores rank the documents (the rank column is not read: TREC's own tools sort by score
    too). A document listed twice for one query keeps its higher score.

    Raises
    ------
    ValueError
        One line naming the file and the line that is not a run line.
    """
    run: Run = {}
    with open_text(path, "a TREC run file") as lines:
        for number, line in enumerate(lines, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise ValueError(
                    f"{path}:{number}: a TREC run line has 6 columns (qid Q0 docid rank score "
                    f"tag), got {len(parts)}"
                )
            try:
                score = float(parts[4])
            except ValueError:
                message = f"{path}:{number}: the score {parts[4]!r} is not a number"
                raise ValueError(message) from None
            if not math.isfinite(score):
                raise ValueError(f"{path}:{number}: the score {parts[4]!r} is not finite")
            documents = run.setdefault(parts[0], {})
            documents[parts[2]] = max(score, documents.get(parts[2], -math.inf))
    if not run:
        raise ValueError(f"{path}: the run file has no line")
    return run


def trec_run_lines(run: Run, tag: str) -> Iterator[str]:
    """A run's lines in TREC format, ``qid Q0 docid rank score tag``, each query's documents by
    decreasing score (then id)."""
    for qid, docs in run.items():
        ranked = sorted(docs.items(), key=lambda item: (-item[1], item[0]))
        for rank, (doc, score) in enumerate(ranked, start=1):
            yield f"{qid} Q0 {doc} {rank} {score:.10g} {tag}\n"


def write_trec_run(run: Run, path: str | Path, tag: str) -> None:
    """Write a run in TREC format (:func:`trec_run_lines`) to the file ``path``."""
    with open(path, "w", encoding="utf-8") as out:
        out.writelines(trec_run_lines(run, tag))


@dataclass
class TrecReport:
    """Aggregate and per-query measures of every method on one collection."""

    collection: str
    methods: dict[str, dict[str, float]]
    per_query: dict[str, dict[str, dict[str, float]]]
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    queries: int = 0
    measures: list[str] = field(default_factory=lambda: list(MEASURES))
    baseline: str = BASELINE
    #: Method → another method it is also compared with (an adaptive fusion → its fixed one).
    pairs: dict[str, str] = field(default_factory=dict)

    def _values(self, measure: str) -> dict[str, dict[str, float]]:
        return {
            method: {q: row.get(measure, 0.0) for q, row in queries.items()}
            for method, queries in self.per_query.items()
        }

    def comparisons(self, measure: str | None = None) -> list[Comparison]:
        """Every method against :attr:`baseline` on ``measure`` (default: the first measure),
        query by query (:func:`~es_scm.evaluation.significance.compare`)."""
        from es_scm.evaluation.significance import compare  # numpy: when a run is compared

        measure = measure or self.measures[0]
        return compare(self._values(measure), self.baseline, measure=measure)

    def pair_comparisons(self, measure: str | None = None) -> list[Comparison]:
        """Each method of :attr:`pairs` against its other method, query by query."""
        from es_scm.evaluation.significance import compare

        measure = measure or self.measures[0]
        values = self._values(measure)
        return [
            comparison
            for method, other in self.pairs.items()
            if method in values and other in values
            for comparison in compare(
                {other: values[other], method: values[method]}, other, measure=measure
            )
        ]

    def to_dict(self) -> dict[str, Any]:
        """Everything, per-query values included (``per_query[method][query][measure]``), and
        each method's comparison with the baseline on every measure."""
        comparisons = {}
        if self.baseline in self.per_query:
            comparisons = {
                m: [c.to_dict() for c in self.comparisons(m)]
                for m in self.measures
                if not _is_count(m)
            }
        paired = {
            m: [c.to_dict() for c in self.pair_comparisons(m)]
            for m in self.measures
            if not _is_count(m) and self.pairs
        }
        return {
            "collection": self.collection,
            "queries": self.queries,
            "measures": self.measures,
            "settings": self.settings,
            "methods": self.methods,
            "baseline": self.baseline,
            "comparisons": comparisons,
            **({"pair_comparisons": paired} if paired else {}),
            "seconds": self.seconds,
            "per_query": self.per_query,
        }

    def significance_markdown(self, header: bool = True) -> str:
        """Each method against the baseline on the first measure: means, Δ, p-values, W/T/L."""
        from es_scm.evaluation.significance import comparison_table

        if self.baseline not in self.per_query or _is_count(self.measures[0]):
            return ""
        comparisons = [*self.comparisons(), *self.pair_comparisons()]
        return comparison_table(comparisons, self.collection, labels=METHOD_LABELS, header=header)

    def markdown(self, header: bool = True) -> str:
        """One row per method: collection, method and the measures (× 100; counts as they are).

        By default the columns are MAP, nDCG@10 and R@100.
        """
        lines = []
        if header:
            lines = [
                "| collection | method | " + " | ".join(map(measure_label, self.measures)) + " |",
                "|:---|:---|" + "---:|" * len(self.measures),
            ]
        for method, values in self.methods.items():
            label = METHOD_LABELS.get(method, method)
            cells = " | ".join(
                f"{values[m]:g}" if _is_count(m) else f"{100 * values[m]:.2f}"
                for m in self.measures
            )
            lines.append(f"| {self.collection} | {label} | {cells} |")
        return "\n".join(lines)


def run_collection(
    client: Any,
    model: Any,
    collection: Any,
    *,
    depth: int = 100,
    hybrids: Mapping[str, Mapping[str, Any]] | None = None,
    index_name: str | None = None,
    keep_index: bool = False,
    settings: Mapping[str, Any] | None = None,
    measures: Sequence[str] = MEASURES,
    existing_index: str | None = None,
    text_analyzer: str | None = None,
    runs: Mapping[str, Run] | None = None,
    dense: DenseOptions | bool | None = None,
    dense_hybrid: Mapping[str, Any] | None = None,
    adaptive: bool = False,
) -> tuple[TrecReport, dict[str, Run]]:
    """Index ``collection``'s documents with ``model`` and evaluate BM25, SCM and BM25 + SCM
    (and, with ``dense``, the dense leg alone, BM25 + dense and the three-way hybrid).

    Parameters
    ----------
    client : Elasticsearch
    model : SoftCosineModel
    collection : TestCollection
        From :func:`es_scm.evaluation.collections.read_collection`.
    depth : int, default=100
        Documents retrieved per query by every method (MAP is AP over this depth).
    hybrids : mapping, optional
        Method name → hybrid options (``fusion``, ``alpha``, ``rrf_k``, read by
        :func:`es_scm.search.hybrid.config.hybrid_options` with the model's own) of
        :meth:`es_scm.elastic.Searcher.hybrid`; default ``{"bm25+scm": {}}`` (the model's
        fusion, else the default one).
    index_name : str, optional
        Default ``es-scm-eval-<collection>-<random>``; deleted afterwards unless ``keep_index``.
    measures : sequence of str, default=MEASURES
        ``ir_measures`` measures (see :func:`check_measures`).
    text_analyzer : str, optional
        The analyzer of the BM25 ``text`` field of the index made (e.g. ``"english"``: stemming
        and English stop words); default the index's, ``standard``.
    existing_index : str, optional
        Search this index (alias, pattern) built with ``model`` instead of indexing the
        collection's documents; it is never deleted. An index built with another model raises
        :class:`~es_scm.elastic.ModelMismatchError` before any search.
    runs : mapping, optional
        Name → a run made elsewhere (:func:`read_trec_run`: a dense retriever's, another
        system's), evaluated and compared with the baseline beside es-scm's methods. Its
        queries that the collection does not judge are not read.
    dense : DenseOptions or True, optional
        Evaluate the dense methods too (module docstring). A
        :class:`~es_scm.options.DenseOptions`: the index made is filled with that encoder's
        vectors (for ``existing_index``: the encoder its queries are encoded with, checked
        against the index's); True: ``existing_index``'s own encoder.
    dense_hybrid : mapping, optional
        The three-way fusion's options (``fusion``, ``weights``, ``rrf_k``, read by
        :func:`es_scm.search.hybrid.config.hybrid_options` with ``dense=True``): default the
        model's, else the default.
    adaptive : bool, default=False
        Also evaluate the adaptive fusion of each hybrid (:data:`ADAPTIVE_METHODS`), each
        compared with the fixed one too.

    Returns
    -------
    (TrecReport, runs)
        The runs are es-scm's methods' (not the ones given).
    """
    from es_scm.elastic import SCMIndex, Searcher

    measures = _checked_measures(measures, depth)
    seconds: dict[str, float] = {}
    queries = collection.judged_queries()
    hybrids = {"bm25+scm": {}} if hybrids is None else dict(hybrids)
    if dense is True and existing_index is None:
        raise ValueError("dense=True evaluates an existing index's own vectors: give its name")
    options = dense if isinstance(dense, DenseOptions) else None
    encoder = options.encoder if options is not None else None
    index = None
    if existing_index is not None:
        name = existing_index
        searcher = Searcher(client, name, model, encoder=encoder)
        searcher.check()
    else:
        name = index_name or f"es-scm-eval-{collection.name}-{uuid.uuid4().hex[:10]}"
        index = SCMIndex(client, name, model, encoder=encoder)
        searcher = index.searcher
    if dense:
        hybrids = {**hybrids, **_dense_methods(dense_hybrid)}
    pairs = adaptive_methods(hybrids) if adaptive else {}
    hybrids = {**hybrids, **{method: hybrids[fixed] for method, fixed in pairs.items()}}
    hybrids = {
        method: {**options, "fusion": "adaptive"} if method in pairs else options
        for method, options in hybrids.items()
    }
    try:
        if index is not None:
            seconds["index"] = _index_collection(index, collection, text_analyzer, options)
        made, timers = _search_queries(searcher, collection.name, queries, depth, hybrids)
        seconds.update({f"search_{m}": t for m, t in timers.items()})
    finally:
        if index is not None and not keep_index:
            index.delete()
    given = {name: _judged_part(run, queries) for name, run in (runs or {}).items()}
    clash = sorted(set(given) & set(made))
    if clash:
        raise ValueError(f"a run given is named like a method of es-scm: {clash[0]!r}")
    every = {**made, **given}
    aggregate, per_query = evaluate_runs(
        {q: collection.qrels[q] for q in queries},
        {m: _nonempty(r) for m, r in every.items()},
        measures,
    )
    empty = {m: sorted(q for q in queries if not r.get(q)) for m, r in every.items()}
    described = {m: _described(o) for m, o in hybrids.items()}
    trec_report = TrecReport(
        collection=collection.name,
        methods=aggregate,
        per_query=per_query,
        settings={
            **dict(settings or {}),
            "depth": depth,
            "hybrids": described,
            "dense": _dense_setting(dense),
            "empty_runs": empty,
        },
        seconds=seconds,
        queries=len(queries),
        measures=measures,
        pairs=pairs,
    )
    return trec_report, made


def adaptive_methods(hybrids: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The adaptive methods of :data:`ADAPTIVE_METHODS` whose fixed fusion is in ``hybrids``:
    adaptive method → fixed method."""
    return {method: fixed for method, fixed in ADAPTIVE_METHODS.items() if fixed in hybrids}


def method_fusion(model_hybrid: Mapping[str, Any] | None, given: Mapping[str, Any]) -> Any:
    """The fusion of an evaluated hybrid method from its options (``dense``: with the dense
    leg), read with the model's own settings as hybrid search reads them
    (:func:`es_scm.search.hybrid.config.hybrid_options`, every parameter passed:
    :func:`es_scm.fusion.fusion_from_options`).

    An ``adaptive`` fusion that the model does not save falls back on the fixed weights the
    model's fixed fusion would use (not on the defaults of another fusion).
    """
    from es_scm.fusion import fusion_from_options
    from es_scm.search.hybrid.config import hybrid_options

    options = dict(given)
    dense = bool(options.pop("dense", False))
    options.pop("neighbours", None)  # the SCM leg's, not the fusion's
    if options.get("fusion") == "adaptive":
        fixed = hybrid_options(model_hybrid, dense=dense)
        if fixed.fusion not in ("adaptive", "rrf"):
            if dense or fixed.weights is not None:
                options.setdefault("weights", fixed.weights)
            else:
                options.setdefault("alpha", fixed.alpha)
    return fusion_from_options(hybrid_options(model_hybrid, dense=dense, **options))


def _dense_methods(dense_hybrid: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The dense methods' options (``dense`` marks a search with the dense leg; the method
    ``dense`` is kNN alone)."""
    return {
        "dense": {"method": "dense"},
        "bm25+dense": {**BM25_DENSE, "dense": True},
        "bm25+scm+dense": {**(dense_hybrid or {}), "dense": True},
    }


def _described(options: Mapping[str, Any]) -> dict[str, Any]:
    """A method's options as the report records them (JSON)."""
    return {k: v.describe() if hasattr(v, "describe") else v for k, v in options.items()}


def _dense_setting(dense: DenseOptions | bool | None) -> Any:
    if isinstance(dense, DenseOptions):
        return dense.as_dict()
    return "the index's own" if dense else None


def _judged_part(run: Run, queries: Mapping[str, str]) -> Run:
    """The run's results for the judged ``queries`` (none for a query it left out)."""
    return {q: dict(run.get(q, {})) for q in queries}


def _checked_measures(measures: Sequence[str], depth: int) -> list[str]:
    """``measures`` checked (:func:`check_measures`) for a run of ``depth`` documents per query;
    a warning for a measure that looks deeper than that."""
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")
    measures = check_measures(measures)
    for measure in measures:
        if _cutoff(measure) > depth:
            logger.warning(
                "%s looks deeper than the %d documents retrieved per query", measure, depth
            )
    return measures


def _search_queries(
    searcher: Any,
    collection: str,
    queries: Mapping[str, str],
    depth: int,
    hybrids: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[str, Run], dict[str, float]]:
    """Every method's run over ``queries`` on the searcher's index (``batch_search``, a method
    at a time, :data:`_BATCH` queries a call so that progress can be shown), and its seconds."""
    methods: dict[str, dict[str, Any]] = {"bm25": {"method": "bm25"}, "scm": {}}
    for method, given in hybrids.items():
        options = dict(given)
        kind = options.pop("method", "hybrid")
        if kind == "dense":
            methods[method] = {"method": "dense"}
            continue
        if kind == "fast":  # the two-phase SCM search: its neighbours and window
            methods[method] = {"method": "fast", **options}
            continue
        dense = bool(options.get("dense", False))
        fusion = method_fusion(searcher.model.hybrid, options)
        methods[method] = {"method": "hybrid", "fusion": fusion, "depth": depth}
        if dense:
            methods[method]["dense"] = True
        if "neighbours" in options:  # the SCM leg's first phase (None: the default)
            methods[method]["neighbours"] = options["neighbours"]
    runs: dict[str, Run] = {method: {} for method in methods}
    timers: dict[str, float] = dict.fromkeys(methods, 0.0)
    ids = list(queries)
    progress = Progress(logger, collection, len(ids) * len(methods), "searches")
    for method, options in methods.items():
        for start in range(0, len(ids), _BATCH):  # batches, so that progress can be told
            batch = {qid: queries[qid] for qid in ids[start : start + _BATCH]}
            started = time.perf_counter()
            results = searcher.batch_search(batch, depth, **options)
            timers[method] += time.perf_counter() - started
            runs[method].update(
                {qid: {h.id: h.score for h in result.hits} for qid, result in results.items()}
            )
            progress.update(len(batch))
    progress.close()
    return runs, timers


def _index_collection(
    index: Any, collection: Any, text_analyzer: str | None, dense: DenseOptions | None = None
) -> float:
    """Index the collection's documents (BM25 with ``text_analyzer``, dense vectors of
    ``dense``); return the seconds."""
    started = time.perf_counter()
    index.create(text_analyzer=text_analyzer, dense=dense)
    report = index.index_documents(
        ({"id": doc_id, "text": text} for doc_id, text in collection.documents.items()),
        batch_size=500,
    )
    if not report.ok:
        raise RuntimeError(f"indexing failed: {report.summary()}: {report.failures[:3]}")
    return time.perf_counter() - started


def read_collection_files(
    name: str, docs: str | Path, queries: str | Path, qrels: str | Path
) -> Any:
    """A :class:`~es_scm.evaluation.collections.TestCollection` from three SMART-format files.

    ``name`` selects the format rules of :mod:`es_scm.evaluation.collections`: Cranfield's
    documents are their ``.W`` text, its queries are renumbered by position and its grades g
    become gains 5 − g (−1 → 0); CISI and CACM documents are ``.T`` + ``.W`` and their judgments
    binary (``qid docid …`` rows).
    """
    from es_scm.evaluation.collections import TestCollection, read_smart_records

    def texts(path: str | Path, keys: tuple[str, ...]) -> dict[str, str]:
        return {
            str(int(record_id)): " ".join(fields[k] for k in keys if fields.get(k))
            for record_id, fields in read_smart_records(path)
        }

    judgments: dict[str, dict[str, int]] = {}
    with open_text(qrels, "a judgments file") as stream:  # a regular file, never a device
        rows = [line.split() for line in stream if line.split()]
    if name == "cranfield":
        documents = texts(docs, ("W",))
        topics = {
            str(position): fields.get("W", "")
            for position, (_, fields) in enumerate(read_smart_records(queries), start=1)
        }
        for parts in rows:
            grade = int(parts[2]) if len(parts) >= 3 else 1
            judgments.setdefault(parts[0], {})[parts[1]] = 5 - grade if 1 <= grade <= 4 else 0
    elif name in ("cisi", "cacm"):
        documents = texts(docs, ("T", "W"))
        topics = texts(queries, ("T", "W") if name == "cisi" else ("W",))
        for parts in rows:
            judgments.setdefault(str(int(parts[0])), {})[str(int(parts[1]))] = 1
    else:
        raise ValueError(f"unknown collection format {name!r}; choose cranfield, cisi or cacm")
    return TestCollection(name, documents, topics, judgments)


def _nonempty(run: Run) -> Run:
    """Queries without results get a dummy hit so that they count as 0, not as missing."""
    return {q: (docs if docs else {"__none__": 0.0}) for q, docs in run.items()}


def dump_json(value: Any, path: str | Path) -> None:
    """Write ``value`` as indented JSON."""
    Path(path).write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
