"""The file of a :class:`~es_scm.similarity.TermSimilarityMatrix`: one ``.npz``.

It holds S's CSC arrays (``data``, ``indices``, ``indptr``, ``shape``), the terms as one UTF-8
blob with their offsets (no pickle), the record of how S was built as JSON, and a ``format``
tag that :func:`read_matrix` checks.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import sparse

__all__ = ["read_matrix", "write_matrix"]

PathLike = str | os.PathLike
_FORMAT = "es-scm-term-similarity-matrix/1"


def write_matrix(
    path: PathLike | io.IOBase,
    matrix: sparse.csc_matrix,
    terms: Sequence[str],
    build_info: Mapping[str, Any],
) -> None:
    """Write S to ``path`` (exactly there, no suffix added), or to an open binary stream."""
    encoded = [term.encode("utf-8") for term in terms]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    arrays = {
        "format": np.array(_FORMAT),
        "data": matrix.data,
        "indices": matrix.indices,
        "indptr": matrix.indptr,
        "shape": np.array(matrix.shape, dtype=np.int64),
        "terms_utf8": np.frombuffer(b"".join(encoded), dtype=np.uint8),
        "terms_offsets": offsets,
        "build_info": np.array(json.dumps(build_info, sort_keys=True)),
    }
    if isinstance(path, io.IOBase):
        np.savez_compressed(path, **arrays)
    else:
        with open(path, "wb") as stream:
            np.savez_compressed(stream, **arrays)


def read_matrix(
    path: PathLike | io.IOBase,
) -> tuple[sparse.csc_matrix, list[str], dict[str, Any]]:
    """S's matrix, terms and build record from a file :func:`write_matrix` wrote.

    Raises
    ------
    ValueError
        If the file is not such a file.
    """
    with np.load(path, allow_pickle=False) as archive:
        if "format" not in archive or str(archive["format"]) != _FORMAT:
            raise ValueError(f"{path!r} is not a saved es-scm TermSimilarityMatrix")
        blob = archive["terms_utf8"].tobytes()
        offsets = archive["terms_offsets"]
        terms = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(len(offsets) - 1)]
        shape = tuple(int(n) for n in archive["shape"])
        matrix = sparse.csc_matrix(
            (archive["data"], archive["indices"], archive["indptr"]), shape=shape
        )
        info = json.loads(str(archive["build_info"])) if "build_info" in archive else {}
    return matrix, terms, info
