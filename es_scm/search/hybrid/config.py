"""Hybrid search's configuration: the fusion, the depth and the legs of a search, resolved from
the options given, the model's own settings (what ``es-scm tune`` saved,
:attr:`~es_scm.model.SoftCosineModel.hybrid`) and the defaults
(:data:`~es_scm.options.defaults.HYBRID_DEFAULTS`,
:data:`~es_scm.options.defaults.HYBRID_DENSE_DEFAULTS`): a search that gives neither fusion nor
depth reads the model's, resolved once for its searcher
(:func:`~es_scm.search.hybrid.plan.hybrid`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from es_scm.fusion import Fusion, ScoreFusion, fusion_from_options
from es_scm.index.dense import MAX_KNN
from es_scm.options import LEGS, HybridOptions
from es_scm.options.defaults import HYBRID_DEFAULTS, HYBRID_DENSE_DEFAULTS

__all__ = ["hybrid_legs", "hybrid_options", "make_fusion", "resolve_fusion"]


def hybrid_options(
    model_defaults: Mapping[str, Any] | None = None,
    *,
    fusion: str | None = None,
    alpha: float | None = None,
    rrf_k: int | None = None,
    depth: int | None = None,
    weights: Mapping[str, float] | None = None,
    dense: bool = False,
) -> HybridOptions:
    """Hybrid options by name (:class:`~es_scm.options.HybridOptions`, checked): what a command
    line gives.

    A ``None`` takes the model's own (``model_defaults``, what ``es-scm tune`` saved: with
    ``dense``, its ``"dense"`` sub-key), else :data:`~es_scm.options.defaults.HYBRID_DEFAULTS` (with
    ``dense``, :data:`~es_scm.options.defaults.HYBRID_DENSE_DEFAULTS`); another fusion than the
    model's takes its own defaults. ``alpha`` (``rrf_k``, ``weights``) given for a fusion that does
    not use it is an error, so that a setting is never silently ignored; so is ``alpha`` with a
    dense leg (three legs are weighed by ``weights``).
    """
    given = {"fusion": fusion, "alpha": alpha, "rrf_k": rrf_k, "depth": depth, "weights": weights}
    saved = dict(model_defaults or {})
    if dense:
        if alpha is not None:
            raise ValueError(
                "alpha weighs BM25 against the SCM (two legs); with a dense leg give weights, "
                "e.g. {'bm25': 0.4, 'scm': 0.1, 'dense': 0.5}"
            )
        defaults, own = HYBRID_DENSE_DEFAULTS.as_dict(), dict(saved.get("dense") or {})
    else:
        defaults = HYBRID_DEFAULTS.as_dict()
        own = {key: value for key, value in saved.items() if key != "dense"}
    base = {**defaults, **own}
    if fusion is not None and fusion != base["fusion"]:  # another fusion: its own defaults
        base = {**defaults, "depth": base["depth"]}
    if alpha is not None:  # α given: the two legs weighed by it, not by saved weights
        base["weights"] = None
    options = HybridOptions(**{**base, **{k: v for k, v in given.items() if v is not None}})
    unused = ("rrf_k",) if options.fusion != "rrf" else ("alpha", "weights")
    for name in unused:
        if given[name] is not None:
            raise ValueError(f"{name} does not apply to fusion={options.fusion!r}")
    return options


def make_fusion(options: HybridOptions) -> Fusion:
    """The :class:`~es_scm.fusion.Fusion` of hybrid options (from the registry, by name, every
    parameter passed: the adaptive fusion's ``base`` and fitted ``model`` too)."""
    return fusion_from_options(options)


def resolve_fusion(
    fusion: Fusion | str | None,
    depth: int | None,
    model_defaults: Mapping[str, Any] | None,
    dense: bool = False,
) -> tuple[Fusion, int]:
    """The fusion and depth of a hybrid search (``dense``: with a dense leg): a
    :class:`~es_scm.fusion.Fusion` as given; a name, or None, as :func:`hybrid_options` reads
    it (the model's own settings, else the defaults); ``depth`` None: the model's, else the
    default. The fusion is checked against the legs (:func:`hybrid_legs`)."""
    if isinstance(fusion, Fusion):
        options = hybrid_options(model_defaults, depth=depth, dense=dense)
        chosen = fusion
    elif fusion is not None and not isinstance(fusion, str):
        raise ValueError(f"fusion must be a Fusion or the name of one, got {fusion!r}")
    else:
        options = hybrid_options(model_defaults, fusion=fusion, depth=depth, dense=dense)
        chosen = make_fusion(options)
    hybrid_legs(chosen, dense)
    if dense and options.depth > MAX_KNN:
        raise ValueError(
            f"depth must be at most {MAX_KNN} with a dense leg (Elasticsearch's largest kNN k), "
            f"got {options.depth}"
        )
    return chosen, options.depth


def hybrid_legs(fusion: Fusion, dense: bool) -> tuple[str, ...]:
    """The legs a hybrid search fuses, in :data:`~es_scm.options.LEGS`' order: those a score
    fusion's ``weights`` name, else BM25 and the SCM, and the dense leg when ``dense``.

    Raises
    ------
    ValueError
        A fusion that cannot fuse those legs: weights that name the dense leg without
        ``dense``, or leave it out with it; ``alpha`` (two legs) with ``dense``.
    """
    if isinstance(fusion, ScoreFusion) and fusion.weights is not None:
        named = set(fusion.weights)
        if ("dense" in named) != dense:
            raise ValueError(
                f"the fusion's weights name the legs {', '.join(fusion.weights)}: "
                + ("give dense= for its dense leg" if not dense else "weigh the dense leg too")
            )
        return tuple(leg for leg in LEGS if leg in named)
    if dense and isinstance(fusion, ScoreFusion):
        raise ValueError(
            f"{fusion.name} with alpha fuses two legs, BM25 and the SCM; with a dense leg give it "
            "weights, e.g. fusion_from('zscore', weights={'bm25': 0.4, 'scm': 0.1, "
            "'dense': 0.5})"
        )
    return ("bm25", "scm", "dense") if dense else ("bm25", "scm")
