"""The schema's vector codec (no server needed): what every document sends and stores."""

from __future__ import annotations

import json

import numpy as np
import scipy.sparse as sp

from es_scm.index.schema import encode_documents, stored_vector

KEYS = np.array([str(i) for i in range(6)], dtype=object)


def test_sources_hold_the_normalized_vectors_keyed_by_term_id() -> None:
    weights = sp.csr_matrix(
        np.array([[0.0, 2.0, 0.0, 1.0, 0.0, 0.0], [0.0] * 6, [3.0, 0.0, 0.0, 0.0, 0.0, 4.0]])
    )
    normalized = sp.csr_matrix(weights.multiply(1.0 / np.array([[2.5], [1.0], [7.0]])))
    sources = encode_documents(
        ["b d", "the", "a f"], normalized, [None, {"lang": "en"}, None], KEYS
    )
    assert sources[0] == {"text": "b d", "scm": {"empty": False, "vector": {"1": 0.8, "3": 0.4}}}
    assert sources[1] == {"text": "the", "scm": {"empty": True}, "metadata": {"lang": "en"}}
    assert sources[2]["scm"]["vector"] == {"0": 3.0 / 7.0, "5": 4.0 / 7.0}


def test_stored_vectors_come_back_bit_for_bit_through_json() -> None:
    rng = np.random.default_rng(5)
    dense = rng.random((20, 6)) * (rng.random((20, 6)) < 0.5)
    norms = np.linalg.norm(dense, axis=1) * 1.3
    scaled = dense / np.where(norms > 0, norms, 1.0)[:, None]
    sources = encode_documents(["t"] * 20, sp.csr_matrix(scaled), [None] * 20, KEYS)
    for row, source in enumerate(sources):
        ids, values = stored_vector(json.loads(json.dumps(source)))
        expected = np.flatnonzero(dense[row])
        np.testing.assert_array_equal(ids, expected)
        np.testing.assert_array_equal(values, scaled[row, expected])


def test_an_empty_source_has_an_empty_vector() -> None:
    ids, values = stored_vector({"text": "the", "scm": {"empty": True}})
    assert ids.size == 0
    assert values.size == 0
