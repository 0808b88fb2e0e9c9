r"""Per-query leg weights from query signals: the small model of the ``adaptive`` fusion.

A :class:`WeightModel` maps a query's signals (:mod:`es_scm.fusion.signals`) to the weight of each
leg of hybrid search by a softmax of linear scores of the standardized signals:

.. math::
    z_j = \operatorname{clip}\bigl((f_j - \mu_j) / \sigma_j, -c, c\bigr), \qquad
    w_l = \frac{\exp(b_l + \sum_j \theta_{lj} z_j)}{\sum_k \exp(b_k + \sum_j \theta_{kj} z_j)}

(μ, σ: the signals' centre and scale on the queries it was fitted on; c = ``clip``). Every
weight is positive and they sum to 1, whatever the signals: the fusion stays increasing in every
leg's score within a query, so hybrid search's bound stays valid. That is proven from the
model's numbers when it is made (:func:`check_bounds`), and a model that cannot keep it is
refused then — constructed, read from a saved model's hybrid settings or given to
``fusion_from`` — in one line naming the value: finite numbers can still make weights of 0 or
NaN (coefficients of 1e308 overflow b + θz; intercepts 1,000 apart underflow a weight to 0).

Why the models that load give finite positive weights, on any finite signals: z_j lies in
[−c, c] after the clip, also where (f_j − μ_j)/σ_j overflows to ±∞. So a leg's score
s_l = b_l + Σ_j θ_lj z_j has :math:`|s_l| \le B_l = |b_l| + c \sum_j |\theta_{lj}|`, and two legs'
scores differ by at most :math:`D_{lk} = |b_l - b_k| + c \sum_j |\theta_{lj} - \theta_{kj}|`. A
model loads when every :math:`B_l \le` :data:`MAX_SCORE` (10¹²), every :math:`D_{lk} \le`
:data:`MAX_SPREAD` (650) and it reads at most :data:`MAX_SIGNALS` (1,000) signals. Then nothing
overflows, and float64's rounding moves each computed score by at most
:math:`\gamma_{n+1} B_l` (n products and n additions in any order, γ_m = m·2⁻⁵³/(1 − m·2⁻⁵³)),
under 0.12 for n ≤ 1,000, so the computed scores differ by less than 651: the softmax's
largest term is exp(0) = 1, the others at least e⁻⁶⁵¹ (a normal float), their sum between 1 and
3, and every weight at least :data:`MIN_WEIGHT` = e⁻⁶⁵¹/3 ≈ 10⁻²⁸³. Fitted models are far inside
these bounds (their coefficients are a few units: :mod:`es_scm.evaluation.adaptive`).

With two legs this is the
logistic α = σ((b₁ − b₂) + (θ₁ − θ₂)ᵀz) of BM25's weight. With θ = 0 the weights are the
constant softmax(b). The model is a few numbers, saved as JSON with a model's hybrid settings
(:meth:`WeightModel.to_dict`); :mod:`es_scm.evaluation.adaptive` fits it.

:meth:`WeightModel.explain` tells which signals moved the weights, and how far: the effect of
signal j on leg l's score, :math:`\theta_{lj} z_j` less its mean over the legs.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from es_scm.fusion.signals import QuerySignals
from es_scm.options import LEGS

__all__ = [
    "LEG_LABELS",
    "MAX_SCORE",
    "MAX_SIGNALS",
    "MAX_SPREAD",
    "MIN_WEIGHT",
    "WeightDecision",
    "WeightModel",
    "check_bounds",
    "signal_phrase",
]

#: The largest |b_l + θ_l·z| a weight model may reach over the clipped signals (module
#: docstring): far from overflow, and small enough that rounding cannot swamp the differences.
MAX_SCORE = 1e12
#: The largest difference of two legs' scores over the clipped signals: beyond about 708,
#: exp underflows and a leg's weight becomes 0 (module docstring).
MAX_SPREAD = 650.0
#: The most signals a weight model reads (its rounding bound grows with them).
MAX_SIGNALS = 1000
#: The smallest weight a model that loads can give a leg: e^-(MAX_SPREAD + 1) / 3.
MIN_WEIGHT = math.exp(-(MAX_SPREAD + 1.0)) / 3.0

#: How an explanation names each leg.
LEG_LABELS = {"bm25": "BM25", "scm": "the SCM", "dense": "the dense leg"}
#: Of a signal (its last part): what a high and a low value say.
_PHRASES = {
    "top": ("{leg}'s best score is high", "{leg}'s best score is low"),
    "log_top": ("{leg}'s best score is high", "{leg}'s best score is low"),
    "ratio2": ("{leg}'s first two scores are close", "{leg}'s best stands far above the second"),
    "ratio10": ("{leg}'s list decays slowly", "{leg}'s list decays fast"),
    "ratio20": ("{leg}'s list decays slowly", "{leg}'s list decays fast"),
    "entropy10": ("{leg}'s top ten is flat", "{leg}'s top ten is peaked"),
    "top_z": ("{leg}'s best stands out", "{leg}'s best does not stand out"),
    "matches10": ("{leg} matches many documents", "{leg} matches few documents"),
    "overlap10": ("{a} and {b} agree on their top ten", "{a} and {b} disagree on their top ten"),
    "overlap20": ("{a} and {b} agree on their top 20", "{a} and {b} disagree on their top 20"),
    "top1": ("{a} and {b} agree on the best", "{a} and {b} disagree on the best"),
    "spearman20": ("{a} and {b} rank alike", "{a} and {b} rank differently"),
    "terms": ("the query is long", "the query is short"),
    "log_terms": ("the query is long", "the query is short"),
    "unseen_share": (
        "many query words are outside the vocabulary",
        "few query words are outside the vocabulary",
    ),
    "idf_mean": ("the query's words are rare", "the query's words are common"),
    "idf_max": ("the query has a rare word", "the query has no rare word"),
    "idf_min": ("every query word is rare", "the query has a common word"),
    "expansion_share": ("the SCM expands the query much", "the SCM expands the query little"),
    "soft_norm_ratio": ("the query's words are similar", "the query's words are unrelated"),
    "exact_share1": (
        "exact matches make most of the SCM's best score",
        "similar words make much of the SCM's best score",
    ),
    "exact_share10": (
        "exact matches make most of the SCM's scores",
        "similar words make much of the SCM's scores",
    ),
}


def signal_phrase(name: str, high: bool) -> str:
    """What a high (or low) value of the signal ``name`` says, in words."""
    parts = name.split(".")
    key = parts[-1]
    if key not in _PHRASES:
        return f"{name} is {'high' if high else 'low'}"
    text = _PHRASES[key][0 if high else 1]
    if parts[0] == "agree" and len(parts) == 4:
        return text.format(
            a=LEG_LABELS.get(parts[1], parts[1]), b=LEG_LABELS.get(parts[2], parts[2])
        )
    return text.format(leg=LEG_LABELS.get(parts[0], parts[0]))


@dataclass(frozen=True)
class WeightDecision:
    """The weights a fusion used for one query, and why.

    ``legs`` are the legs fused, ``weights`` the weights used, ``fixed`` the fixed fusion's;
    ``adapted`` is False when the fixed ones were used (``reason`` says why);
    ``effects`` are (signal, standardized value, effect on the weights) of the signals that
    moved them most.
    """

    legs: tuple[str, ...]
    weights: tuple[float, ...]
    fixed: tuple[float, ...]
    adapted: bool
    reason: str = ""
    effects: tuple[tuple[str, float, float], ...] = ()

    def as_dict(self) -> dict[str, float]:
        """The weights by leg."""
        return dict(zip(self.legs, self.weights, strict=True))

    def explanation(self) -> str:
        """One line: the weights, the fixed ones, and the signals that moved them."""
        if len(self.legs) == 2 and "bm25" in self.legs:
            at = self.legs.index("bm25")
            used = f"BM25 weight {self.weights[at]:.2f} (fixed {self.fixed[at]:.2g})"
        else:
            used = "weights " + ", ".join(
                f"{LEG_LABELS.get(leg, leg)} {w:.2f}"
                for leg, w in zip(self.legs, self.weights, strict=True)
            )
            used += " (fixed " + "/".join(f"{w:.2g}" for w in self.fixed) + ")"
        if not self.adapted:
            return f"{used}: the fixed weights, {self.reason}"
        if not self.effects:
            return f"{used}: no signal moved them"
        said = [signal_phrase(name, z > 0) for name, z, _ in self.effects]
        return f"{used}: " + " and ".join(dict.fromkeys(said))


@dataclass(frozen=True)
class WeightModel:
    """Leg weights from standardized query signals by a softmax (module docstring).

    Parameters
    ----------
    legs : sequence of str
        The legs weighed, in :data:`~es_scm.options.LEGS`' order.
    signals : sequence of str
        The signals read (:mod:`es_scm.fusion.signals`' names).
    center, scale : sequence of float
        μ and σ > 0 of each signal.
    intercepts : sequence of float
        b, one per leg.
    coefficients : sequence of sequences of float
        θ, one row per leg, one value per signal.
    clip : float > 0
        The largest |z|: a signal far outside what the model saw moves the weights no further.
    """

    legs: tuple[str, ...]
    signals: tuple[str, ...]
    center: tuple[float, ...]
    scale: tuple[float, ...]
    intercepts: tuple[float, ...]
    coefficients: tuple[tuple[float, ...], ...]
    clip: float = 3.0

    def __post_init__(self) -> None:
        legs = tuple(str(leg) for leg in self.legs)
        if len(legs) < 2 or len(set(legs)) != len(legs) or not set(legs) <= set(LEGS):
            raise ValueError(
                f"a weight model weighs two or three distinct legs of {LEGS}, got {self.legs!r}"
            )
        signals = tuple(str(name) for name in self.signals)
        n = len(signals)
        center = _finite(self.center, "center", n)
        scale = _finite(self.scale, "scale", n)
        if any(s <= 0.0 for s in scale):
            raise ValueError(f"a weight model's scale must be positive, got {self.scale!r}")
        intercepts = _finite(self.intercepts, "intercepts", len(legs))
        if len(self.coefficients) != len(legs):
            raise ValueError(f"a weight model needs one row of coefficients per leg ({len(legs)})")
        coefficients = tuple(_finite(row, "coefficients", n) for row in self.coefficients)
        if not (isinstance(self.clip, int | float) and math.isfinite(self.clip) and self.clip > 0):
            raise ValueError(f"a weight model's clip must be a positive number, got {self.clip!r}")
        check_bounds(legs, signals, intercepts, coefficients, float(self.clip))
        for name, value in (
            ("legs", legs),
            ("signals", signals),
            ("center", center),
            ("scale", scale),
            ("intercepts", intercepts),
            ("coefficients", coefficients),
            ("clip", float(self.clip)),
        ):
            object.__setattr__(self, name, value)

    @classmethod
    def constant(cls, weights: Mapping[str, float]) -> WeightModel:
        """The model that always gives ``weights`` (positive, by leg), reading no signal."""
        legs = tuple(leg for leg in LEGS if leg in weights)
        total = sum(float(weights[leg]) for leg in legs)
        if total <= 0.0 or any(float(weights[leg]) <= 0.0 for leg in legs):
            raise ValueError(f"constant weights must be positive, got {dict(weights)!r}")
        logs = tuple(math.log(float(weights[leg]) / total) for leg in legs)
        return cls(legs, (), (), (), logs, tuple(() for _ in legs))

    def pruned(self) -> WeightModel:
        """The same model without the signals it gives no weight to (the same weights for
        every query; fewer signals needed)."""
        kept = [
            j for j in range(len(self.signals)) if any(row[j] != 0.0 for row in self.coefficients)
        ]
        return WeightModel(
            self.legs,
            tuple(self.signals[j] for j in kept),
            tuple(self.center[j] for j in kept),
            tuple(self.scale[j] for j in kept),
            self.intercepts,
            tuple(tuple(row[j] for j in kept) for row in self.coefficients),
            self.clip,
        )

    def standardized(self, signals: QuerySignals) -> np.ndarray | None:
        """z of the model's signals; None if one of them is missing."""
        values = [signals.get(name) for name in self.signals]
        if any(value is None for value in values):
            return None
        raw = np.array(values, dtype=np.float64)
        # (f - μ)/σ may overflow to ±inf for finite numbers far apart (or a tiny σ): the clip
        # makes it ±c, the value it tends to, so the overflow is no error here
        with np.errstate(over="ignore"):
            shifted = (raw - np.array(self.center)) / np.array(self.scale)
        return np.clip(shifted, -self.clip, self.clip)

    def scores_of(self, z: np.ndarray) -> np.ndarray:
        """The legs' linear scores b + θz of standardized signals ``z`` (a row per query, or
        one query)."""
        theta = np.array(self.coefficients, dtype=np.float64).reshape(len(self.legs), -1)
        return np.asarray(z, dtype=np.float64) @ theta.T + np.array(self.intercepts)

    def weights_of(self, z: np.ndarray) -> np.ndarray:
        """The softmax of :meth:`scores_of`: the legs' weights, each row summing to 1."""
        scores = self.scores_of(z)
        scores = scores - scores.max(axis=-1, keepdims=True)
        exp = np.exp(scores)
        return np.asarray(exp / exp.sum(axis=-1, keepdims=True))

    def effects(self, z: np.ndarray, top: int = 2) -> list[tuple[str, float, float]]:
        """The ``top`` signals that move the weights most: (name, z, effect), the effect the
        largest |θ_lj z_j − mean over legs| over the legs, largest first (none below 0.05)."""
        if not self.signals:
            return []
        theta = np.array(self.coefficients, dtype=np.float64)
        pushes = theta * z[None, :]
        pushes = pushes - pushes.mean(axis=0, keepdims=True)
        size = np.abs(pushes).max(axis=0)
        order = np.argsort(-size, kind="stable")[:top]
        return [(self.signals[j], float(z[j]), float(size[j])) for j in order if size[j] >= 0.05]

    def to_dict(self) -> dict[str, Any]:
        """JSON: what a model's hybrid settings keep (:meth:`from_dict` reads it back)."""
        return {
            "legs": list(self.legs),
            "signals": list(self.signals),
            "center": list(self.center),
            "scale": list(self.scale),
            "intercepts": list(self.intercepts),
            "coefficients": [list(row) for row in self.coefficients],
            "clip": self.clip,
        }

    @classmethod
    def from_dict(cls, data: Any) -> WeightModel:
        """The model of :meth:`to_dict`'s JSON; ValueError naming what is wrong."""
        if isinstance(data, WeightModel):
            return data
        if not isinstance(data, Mapping):
            raise ValueError(f"a weight model must be a mapping, got {data!r}")
        known = {"legs", "signals", "center", "scale", "intercepts", "coefficients", "clip"}
        unknown = sorted(set(data) - known)
        missing = sorted(known - {"clip"} - set(data))
        if unknown or missing:
            raise ValueError(
                f"a weight model has the keys {sorted(known)}; "
                + (f"unknown {unknown}" if unknown else f"missing {missing}")
            )
        try:
            return cls(
                tuple(data["legs"]),
                tuple(data["signals"]),
                tuple(data["center"]),
                tuple(data["scale"]),
                tuple(data["intercepts"]),
                tuple(tuple(row) for row in data["coefficients"]),
                data.get("clip", 3.0),
            )
        except TypeError as error:
            raise ValueError(f"a weight model's values must be lists of numbers: {error}") from None


def check_bounds(
    legs: Sequence[str],
    signals: Sequence[str],
    intercepts: Sequence[float],
    coefficients: Sequence[Sequence[float]],
    clip: float,
) -> None:
    """Nothing if a weight model of these (finite) numbers gives finite positive weights on any
    signals (the module docstring's bounds); else a ``ValueError`` in one line that names the
    largest part of the bound it breaks.

    Raises
    ------
    ValueError
        More than :data:`MAX_SIGNALS` signals, a leg's score that can exceed
        :data:`MAX_SCORE`, or two legs' scores that can differ by more than :data:`MAX_SPREAD`.
    """
    if len(signals) > MAX_SIGNALS:
        raise ValueError(f"a weight model reads at most {MAX_SIGNALS} signals, got {len(signals)}")
    # Python floats: a bound that overflows is inf, never NaN (sums of non-negative terms; their
    # rounding is a relative 1e-13 at most, well within the bounds' headroom)
    for leg, intercept, row in zip(legs, intercepts, coefficients, strict=True):
        parts = [abs(intercept), *(clip * abs(theta) for theta in row)]
        bound = sum(parts)
        if bound > MAX_SCORE:
            raise ValueError(
                f"a weight model's score of the leg {leg} (b + θz, signals clipped to "
                f"±{clip:.4g}) can reach {_amount(bound)}, over the limit of {MAX_SCORE:.0e} "
                "beyond which weights overflow or lose their precision: most of it from "
                f"{_largest(parts, intercept, row, signals, clip)}"
            )
    for (a, leg_a), (b, leg_b) in itertools.combinations(enumerate(legs), 2):
        row_a, row_b = coefficients[a], coefficients[b]
        parts = [
            abs(intercepts[a] - intercepts[b]),
            *(clip * abs(x - y) for x, y in zip(row_a, row_b, strict=True)),
        ]
        spread = sum(parts)
        if spread > MAX_SPREAD:
            at = max(range(len(parts)), key=parts.__getitem__)
            part = (
                f"the intercepts {intercepts[a]:.4g} and {intercepts[b]:.4g}"
                if at == 0
                else f"the coefficients {row_a[at - 1]:.4g} and {row_b[at - 1]:.4g} of "
                f"{signals[at - 1]} (times the clip {clip:.4g})"
            )
            raise ValueError(
                f"a weight model's scores of the legs {leg_a} and {leg_b} (b + θz, signals "
                f"clipped to ±{clip:.4g}) can differ by {_amount(spread)}, over the limit of "
                f"{MAX_SPREAD:g} beyond which a leg's weight rounds to 0: most of it from {part}"
            )


def _amount(value: float) -> str:
    """A bound in words: its value, or that it overflows float64."""
    return f"{value:.4g}" if math.isfinite(value) else "more than 1.8e+308 (an overflow)"


def _largest(
    parts: Sequence[float],
    intercept: float,
    row: Sequence[float],
    signals: Sequence[str],
    clip: float,
) -> str:
    """The largest part of a leg's score bound, in words."""
    at = max(range(len(parts)), key=parts.__getitem__)
    if at == 0:
        return f"its intercept {intercept:.4g}"
    return f"its coefficient {row[at - 1]:.4g} of {signals[at - 1]} (times the clip {clip:.4g})"


def _finite(values: Any, name: str, size: int) -> tuple[float, ...]:
    try:
        numbers = tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise ValueError(f"a weight model's {name} must be numbers, got {values!r}") from None
    if len(numbers) != size:
        raise ValueError(f"a weight model's {name} must have {size} values, got {len(numbers)}")
    if not all(math.isfinite(v) for v in numbers):
        raise ValueError(f"a weight model's {name} must be finite, got {values!r}")
    return numbers


def decide(
    model: WeightModel | None,
    legs: Sequence[str],
    fixed: Sequence[float],
    signals: QuerySignals | None,
) -> WeightDecision:
    """The weights of ``legs`` for a query: the model's from ``signals``, else ``fixed`` (no
    model, a model of other legs, or a signal missing), with the reason."""
    legs, fixed = tuple(legs), tuple(float(w) for w in fixed)

    def keep(reason: str) -> WeightDecision:
        return WeightDecision(legs, fixed, fixed, False, reason)

    if model is None:
        return keep("as the fusion has no weight model")
    if sorted(model.legs) != sorted(legs):
        return keep(f"as its model weighs {', '.join(model.legs)}, not {', '.join(legs)}")
    if signals is None:
        return keep("as the query's signals are not known")
    z = model.standardized(signals)
    if z is None:
        missing = signals.missing(model.signals)
        return keep(f"as the signal {missing[0]} is missing")
    by_leg = dict(zip(model.legs, model.weights_of(z).tolist(), strict=True))
    weights = tuple(by_leg[leg] for leg in legs)
    return WeightDecision(legs, weights, fixed, True, "", tuple(model.effects(z)))
