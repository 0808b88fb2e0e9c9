"""The bound that document-side expansion proves its results with: ‖S‖₂ (the expansion through a
real Elasticsearch: tests/integration/test_document_expansion_es.py)."""

from __future__ import annotations

import scipy.sparse.linalg


def test_the_spectral_norm_bound_holds(cranfield_default_model):
    S = cranfield_default_model.similarity_matrix
    largest = scipy.sparse.linalg.svds(S.rows, k=1, return_singular_vectors=False)[0]
    assert largest <= S.spectral_norm_bound() * (1 + 1e-9)
