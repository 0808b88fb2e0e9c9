r"""The one protocol every source of S implements, and the registry that reads ``embeddings=``.

As in gensim (``similarities/termsim.py``), a source of term similarities is a strategy object
whose ``most_similar(term, topn)`` gives a term's neighbours, and one matrix class,
:class:`~es_scm.similarity.TermSimilarityMatrix`, is built from it. A source here says, in one
class:

``kind``
    What it is called: the ``"source"`` of its record in the model's build info.
``defaults``
    Its threshold, exponent and ``nonzero_limit`` unless the model or a part of a combination
    gives its own (:func:`es_scm.options.source_settings`).
:meth:`~SimilaritySource.recognize`
    Which values of ``embeddings=`` name it (an instance of itself, gensim ``KeyedVectors``,
    ``"train:word2vec"``, ``"encoder:NAME"``...).
:meth:`~SimilaritySource.most_similar`
    A term's neighbours with their similarities, most similar first (gensim's name and
    semantics); :meth:`~SimilaritySource.similarity_matrix` builds S's columns from them with the
    one greedy builder (:func:`es_scm.similarity.builder.greedy_matrix`). A source with a faster
    way to the same columns (word vectors: blocked matrix products) overrides the latter.

A source that needs the corpus or the terms before it has neighbours (vectors to train or to
encode, ``"auto"``'s choice) becomes a ready one in :meth:`~SimilaritySource.prepare`.

Adding a source is one module: a subclass decorated with :func:`register`
(docs/SOURCES.md, "Adding a source"). :func:`as_source` asks the registered kinds in turn.
"""

from __future__ import annotations

import logging
from abc import ABC
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, TypeVar

import numpy as np
from scipy import sparse

from es_scm.options import EncoderOptions, SimilarityOptions, SourceOptions
from es_scm.options.defaults import EMBEDDING_SOURCE
from es_scm.options.validation import check_terms
from es_scm.progress import Progress
from es_scm.similarity.builder import column_order, greedy_matrix

__all__ = [
    "SOURCES",
    "Preparation",
    "SimilaritySource",
    "SourcePart",
    "as_source",
    "read_source",
    "register",
]

logger = logging.getLogger(__name__)


class SourcePart(NamedTuple):
    """One part of a source of S: its weight, its source, and its own options."""

    weight: float
    source: Any
    options: SourceOptions | None = None


@dataclass
class Preparation:
    """What a source may need to become ready (:meth:`SimilaritySource.prepare`).

    Parameters
    ----------
    terms : sequence of str
        The model's terms.
    tokenizer : es_scm.model.text.Tokenizer
        The model's (``tokenize``, ``tokenize_many``): a background corpus is tokenized as the
        model's texts are.
    corpus : es_scm.model.trained.OwnCorpus or None
        The model's corpus as a sentence file (``counts``, ``file()``), when a source asked for
        it (:meth:`SimilaritySource.corpus_sink`).
    record : dict
        What a source records of its preparation for S's build info (``"auto"``: its choice).
    """

    terms: Sequence[str]
    tokenizer: Any
    corpus: Any = None
    record: dict[str, Any] = field(default_factory=dict)


class SimilaritySource(ABC):  # noqa: B024 - every method has a default; a subclass overrides some
    """A source of term similarities for S (see the module docstring).

    A subclass sets ``kind`` and ``defaults`` and implements :meth:`most_similar`; the other
    methods have defaults that suit a source that is ready as given.
    """

    __slots__ = ()

    #: What it is called: its record in the model's build info (``build_info["source"]``).
    kind: ClassVar[str] = "source"
    #: Its threshold, exponent and nonzero_limit unless told otherwise.
    defaults: ClassVar[SourceOptions | EncoderOptions] = EMBEDDING_SOURCE
    #: Whether it may be a part of a combination (``[(0.3, A), (0.7, B)]``).
    combinable: ClassVar[bool] = True
    #: What values of ``embeddings=`` name it, for the message that refuses any other value.
    accepts: ClassVar[str] = ""

    @classmethod
    def recognize(cls, value: Any) -> SimilaritySource | None:
        """The source that ``value`` (of ``embeddings=``) names, or None if not of this kind."""
        return value if isinstance(value, cls) else None

    def kind_defaults(self) -> SourceOptions | EncoderOptions:
        """This source's defaults: its kind's (:attr:`defaults`), which an instance may refine."""
        return self.defaults

    def corpus_sink(self) -> Any:
        """A :class:`~es_scm.similarity.training.SentenceFile` for the model's corpus, if this
        source needs it to become ready (trains on it), else None."""
        return None

    def prepare(self, preparation: Preparation) -> SimilaritySource | None:
        """This source made ready for S (trained, encoded, chosen); itself by default."""
        return self

    def weighted_parts(self) -> tuple[SourcePart, ...]:
        """The weighted sources whose matrices S combines: this one alone, with weight 1."""
        return (SourcePart(1.0, self),)

    def describe(self) -> dict[str, Any]:
        """What the source is, for its build record."""
        return {"kind": self.kind}

    def most_similar(self, term: str, topn: int = 10) -> Sequence[tuple[str, float]]:
        """The ``topn`` words most similar to ``term`` (not itself), most similar first, as
        ``(word, similarity)`` pairs (gensim's ``TermSimilarityIndex.most_similar``)."""
        kind = type(self).__name__
        raise TypeError(f"S needs word vectors, got {kind} (not trained or encoded)")

    def similarity_matrix(
        self,
        terms: Sequence[str],
        options: SimilarityOptions,
        *,
        document_frequencies: Sequence[float] | np.ndarray | None,
        dtype: np.dtype,
        batch_size: int | None,
    ) -> tuple[sparse.csc_matrix, dict[str, Any]]:
        """S over ``terms`` from :meth:`most_similar`, and the record of how it was built.

        ``options`` are this source's settings (:func:`es_scm.options.source_settings`): a
        neighbour's similarity counts if above ``threshold`` and enters S raised to
        ``exponent``; a column holds at most ``nonzero_limit`` of them, filled rarest term first
        by ``document_frequencies`` (by term id without them). Neighbours that are not terms are
        dropped, as gensim's ``SparseTermSimilarityMatrix`` does.
        """
        terms = check_terms(terms)
        threshold, exponent = options.threshold, options.exponent
        if threshold is None or exponent is None:
            raise ValueError("S from a source needs a threshold and an exponent, got None")
        limit = options.budget(len(terms))
        order, rank = column_order(len(terms), document_frequencies)
        ids = {term: i for i, term in enumerate(terms)}

        def candidates(t1: int, budget: int) -> tuple[np.ndarray, np.ndarray]:
            found = [
                (ids[word], similarity)
                for word, similarity in self.most_similar(terms[t1], topn=budget)
                if word in ids and ids[word] != t1 and similarity > threshold
            ]
            row = np.array([i for i, _ in found], dtype=np.int64)
            sims = np.array([s for _, s in found], dtype=np.float64)
            values = np.power(sims, exponent).astype(dtype)
            if len(row) > 1:
                sort = np.argsort(rank[row], kind="stable")
                row, values = row[sort], values[sort]
            return row, values

        progress = Progress(logger, f"S from {self.kind}", len(terms), "terms")
        matrix = greedy_matrix(
            len(terms),
            order,
            limit,
            candidates,
            options.symmetric,
            options.dominant,
            dtype,
            progress,
        )
        info = {
            "source": self.kind,
            self.kind: self.describe(),
            "nonzero_limit": options.nonzero_limit,
            "threshold": threshold,
            "exponent": exponent,
            "symmetric": options.symmetric,
            "dominant": options.dominant,
            "column_order": "id" if document_frequencies is None else "rarest",
        }
        return matrix, info

    def unseen(
        self, terms: Sequence[str], *, limit: int, options: SimilarityOptions, weight: float
    ) -> Any:
        """The words outside ``terms`` that a query may use
        (:class:`~es_scm.similarity.unseen.UnseenTerms`), or None: a source without vectors of
        words outside the terms has none."""
        return None


#: The registered kinds of source, asked in order by :func:`as_source`.
SOURCES: list[type[SimilaritySource]] = []

_Kind = TypeVar("_Kind", bound=type[SimilaritySource])


def register(kind: _Kind) -> _Kind:
    """Register a kind of source (a class decorator): :func:`as_source` then recognizes it."""
    if kind not in SOURCES:
        SOURCES.append(kind)
    return kind


def as_source(
    value: Any, kinds: Sequence[type[SimilaritySource]] | None = None
) -> SimilaritySource | None:
    """The source that the first registered kind to recognize ``value`` makes of it, else None."""
    for kind in SOURCES if kinds is None else kinds:
        source = kind.recognize(value)
        if source is not None:
            return source
    return None


def read_source(value: Any) -> SimilaritySource | None:
    """The source that ``value`` names (None for None), by the registered kinds.

    Raises
    ------
    ValueError
        For a value that no kind recognizes (the message lists what each accepts), or one that
        a kind recognizes but finds malformed.
    """
    if value is None:
        return None
    source = as_source(value)
    if source is None:
        accepted = ", ".join(kind.accepts or kind.__name__ for kind in SOURCES)
        shown = repr(value) if isinstance(value, str) else type(value).__name__
        raise ValueError(f"embeddings must be {accepted}, or None, got {shown}")
    return source
