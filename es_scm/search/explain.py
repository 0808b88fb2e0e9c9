r"""Explanations of search hits: which term pairs of the query and a hit make up its SCM.

A hit's exact score (:meth:`~es_scm.search.query.ExpandedQuery.exact_scores`) is computed from
the query's weighted vector x, its soft norm :math:`\lVert x\rVert_S` and the hit's stored
normalized vector :math:`y' = Wy / \lVert Wy\rVert_S` (float64, from ``_source``):

.. math::

    \operatorname{SCM}(x, y) = \frac{x^T S y'}{\lVert x\rVert_S}
        = \sum_{i \in \operatorname{supp} x} \sum_{j \in \operatorname{supp} y'}
          \frac{x_i\, s_{ij}\, y'_j}{\lVert x\rVert_S}.

The explanation decomposes exactly that (:func:`es_scm.model.explanation.explain_vectors` with
norms :math:`(\lVert x\rVert_S, 1)`), so in ``exact`` and ``rescore`` modes the contributions
sum to ``hit.score`` within 1e-9. In ``native`` mode ``hit.score`` is Elasticsearch's 9-bit
estimate, and in ``hybrid`` mode the fused score; the explanation is of the exact SCM, its
``score`` (in hybrid mode, ``hit.components["scm"]``), whichever leg found the hit.
Elasticsearch's own ``explain`` names terms by feature id and scores with the 9-bit stored
values; this one names the terms.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from es_scm.model.explanation import Explanation, explain_vectors
from es_scm.search.query import ExpandedQuery
from es_scm.search.results import Stored
from es_scm.similarity.scm import stored_rows

if TYPE_CHECKING:  # pragma: no cover
    from es_scm.model import SoftCosineModel

__all__ = ["explain_stored", "explanation_of"]


def explain_stored(
    model: SoftCosineModel,
    expanded: ExpandedQuery,
    terms: np.ndarray,
    values: np.ndarray,
    top: int | None = None,
) -> Explanation:
    r"""The explanation of :math:`\operatorname{SCM}(x, y) = x^T S y' / \lVert x\rVert_S`.

    Parameters
    ----------
    model : SoftCosineModel
        The index's model (its S names and scores the pairs).
    expanded : ExpandedQuery
        The query: x (``weights``) and :math:`\lVert x\rVert_S` (``norm``).
    terms, values : numpy.ndarray
        The document's stored y' (:func:`es_scm.index.schema.stored_vector`).
    top : int or None, optional
        Keep the ``top`` largest pairs only.

    Returns
    -------
    Explanation
        ``score`` is the hit's exact score (``expanded.exact_scores``); the document weights
        are y' (``document_norm`` 1).
    """
    y = stored_rows([(terms, values)], len(model.terms))
    score = float(expanded.scores(y)[0])
    norms = (expanded.norm, 1.0) if len(terms) else (0.0, 0.0)
    return explain_vectors(
        model.similarity_matrix, expanded.weights, y, norms, score, top, expanded.unseen
    )


def explanation_of(model: SoftCosineModel, expanded: ExpandedQuery, stored: Stored) -> Explanation:
    """The explanation of a stored document's exact SCM (all pairs): what a hit of any search
    method carries with ``explain=True``."""
    return explain_stored(model, expanded, *stored.vector)
