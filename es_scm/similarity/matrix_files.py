"""The file of a :class:`~es_scm.similarity.TermSimilarityMatrix`: one ``.npz``.

It holds S's CSC arrays (``data``, ``indices``, ``indptr``, ``shape``), the terms as one UTF-8
blob with their offsets (no pickle), the record of how S was built as JSON, and a ``format``
tag that :func:`read_matrix` checks.

:func:`read_matrix` reads the file through :func:`es_scm.files.read_npz`: before any array is
unpacked, every member's declared shape and dtype must fit S (:func:`matrix_problem`): n + 1
column pointers and term offsets (n the number of terms, the vocabulary's when the file is part
of a model), as many row indices as values and at most n² of them, and a ``format`` and build
record of bounded length; and the whole file may declare at most
:data:`~es_scm.files.MAX_INFLATION` times its size on disk. The build record is not used to bound
anything: it is not part of the ``model_id``, so whoever edits the file edits it too.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Mapping, Sequence
from typing import IO, Any, cast

import numpy as np
from scipy import sparse

from es_scm.files import ArrayHeader, human_bytes, open_regular, read_npz

__all__ = ["matrix_problem", "read_matrix", "write_matrix"]

PathLike = str | os.PathLike
_FORMAT = "es-scm-term-similarity-matrix/1"
_MEMBERS = ("format", "data", "indices", "indptr", "shape", "terms_utf8", "terms_offsets")
#: The longest build record a file may hold, in characters (a record is a few hundred).
MAX_BUILD_INFO = 2**20


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
    path: PathLike | io.IOBase | IO[bytes], n_terms: int | None = None
) -> tuple[sparse.csc_matrix, list[str], dict[str, Any]]:
    """S's matrix, terms and build record from a file :func:`write_matrix` wrote.

    ``path`` is a path (a link to a file is followed: the caller chose it) or an open binary
    stream; ``n_terms``, when known (a model's vocabulary), is the number of terms S must have.
    Nothing is unpacked before the declared arrays are checked (see the module docstring).

    Raises
    ------
    ValueError
        If the file is not such a file, or declares arrays that do not fit S or its size
        (:class:`~es_scm.files.UnsafeFileError`, naming the file and the size declared).
    """
    if isinstance(path, (str, os.PathLike)):
        with open_regular(path, "S's file", follow_symlinks=True) as opened:
            return read_matrix(opened, n_terms)
    stream = cast(IO[bytes], path)
    arrays = read_npz(stream, lambda headers: matrix_problem(headers, n_terms), "S's file")
    if str(arrays["format"]) != _FORMAT:
        raise ValueError(
            f"{getattr(path, 'name', path)!r} is not a saved es-scm TermSimilarityMatrix"
        )
    blob = arrays["terms_utf8"].tobytes()
    offsets = arrays["terms_offsets"]
    terms = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(len(offsets) - 1)]
    shape = tuple(int(n) for n in arrays["shape"])
    matrix = sparse.csc_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape)
    info = json.loads(str(arrays["build_info"])) if "build_info" in arrays else {}
    return matrix, terms, info


def matrix_problem(headers: Mapping[str, ArrayHeader], n_terms: int | None = None) -> str | None:
    """Why the arrays an S file declares (member → header) cannot be S over ``n_terms`` terms
    (over as many as the file has, if None), or None when they fit."""
    if "format" not in headers or not headers["format"].is_text(len(_FORMAT)):
        return "not a saved es-scm TermSimilarityMatrix"
    extra = sorted(set(headers) - {*_MEMBERS, "build_info"})
    missing = [name for name in _MEMBERS if name not in headers]
    if extra or missing:
        odd = f"no member {missing[0]!r}" if missing else f"a member {extra[0]!r}"
        return f"not a saved es-scm TermSimilarityMatrix ({odd})"
    if not headers["indptr"].is_vector("iu"):
        return f"indptr declares {_describe(headers['indptr'])}, not a vector of integers"
    n = headers["indptr"].size - 1 if n_terms is None else n_terms
    source = "" if n_terms is None else " (the vocabulary's)"
    expected = {
        "indptr": headers["indptr"].is_vector("iu", n + 1),
        "terms_offsets": headers["terms_offsets"].is_vector("iu", n + 1),
        "shape": headers["shape"].is_vector("iu", 2),
        "terms_utf8": headers["terms_utf8"].is_vector("u")
        and headers["terms_utf8"].dtype.itemsize == 1,
        "data": headers["data"].is_vector("f"),
        "indices": headers["indices"].is_vector("iu", headers["data"].size),
    }
    for name, fits in expected.items():
        if not fits:
            declared = _describe(headers[name])
            return f"{name} declares {declared}, which does not fit S over {n} terms{source}"
    nnz = headers["data"].size
    if nnz > n * n:
        declared = human_bytes(headers["data"].nbytes + headers["indices"].nbytes)
        return f"{nnz} non-zeros ({declared}) declared, more than S of {n} × {n} can hold"
    if "build_info" in headers and not headers["build_info"].is_text(MAX_BUILD_INFO):
        return f"build_info declares {_describe(headers['build_info'])}, more than a build record"
    return None


def _describe(header: ArrayHeader) -> str:
    return f"{header.shape} {header.dtype} ({human_bytes(header.nbytes)})"
