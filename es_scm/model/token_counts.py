"""Tokens met while vectorizing texts with a model: how many, and how many it did not know."""

from __future__ import annotations

from dataclasses import dataclass

from es_scm.model.vocabulary import Vocabulary

__all__ = ["TokenCounts"]


@dataclass
class TokenCounts:
    """Tokens met while vectorizing: how many were terms, and how many of them were unknown.

    ``tokens`` counts the tokens that the tokenizer keeps (not stop words, long enough), and
    ``unknown`` those of them that are not in the model's vocabulary: their share is comparable
    with :attr:`Vocabulary.pruned_share`, the share of the model's own corpus that pruning left
    out. Pass one to :meth:`SoftCosineModel.counts` or :meth:`SoftCosineModel.vectorize_many`,
    which add to it.
    """

    tokens: int = 0
    unknown: int = 0

    #: Fewer tokens than this say too little about a corpus to warn about drift.
    DRIFT_MIN_TOKENS = 1000

    @property
    def unknown_share(self) -> float | None:
        """``unknown / tokens``; None when there were no tokens."""
        return self.unknown / self.tokens if self.tokens else None

    def drift(self, vocabulary: Vocabulary) -> str | None:
        """A warning when the unknown share is far above what the model's corpus left out.

        "Far above" is at least twice :attr:`Vocabulary.pruned_share` and at least 10
        percentage points above it, over :data:`DRIFT_MIN_TOKENS` tokens or more: the texts use
        many words that the model's corpus did not have (or had too rarely), which the SCM then
        ignores. None when there is no such drift, or the model did not record its pruned share.
        """
        pruned = vocabulary.pruned_share
        share = self.unknown_share
        if pruned is None or share is None or self.tokens < self.DRIFT_MIN_TOKENS:
            return None
        if share < max(2.0 * pruned, pruned + 0.10):
            return None
        return (
            f"{100 * share:.1f}% of the corpus's tokens are unknown to the model, whose own corpus "
            f"left out only {100 * pruned:.1f}%: the corpus has drifted from the model's; the "
            "SCM ignores unknown words, so consider rebuilding the model on this corpus"
        )
