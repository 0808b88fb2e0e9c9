"""A soft cosine model on disk, and its identity (``model_id``).

Everything that affects a score is saved as one bundle::

    model.json        tokenizer config, document and query weighting, how S was built, model_id
    vocabulary.json   terms, document frequencies, corpus statistics
    similarity.npz    S (:meth:`es_scm.similarity.TermSimilarityMatrix.save`)
    unseen.npz        the words outside the vocabulary that a query may use, if any
                      (:class:`es_scm.similarity.unseen.UnseenTerms`)

The ``model_id`` is a SHA-256 content hash over exactly what can change a score: the canonical
JSON of the tokenizer and weighting configs; the vocabulary's terms, and its document
frequencies and N when a weighting uses idf, and its token count when one is BM25; S's shape,
dtype, data, indices and indptr in canonical CSC form; the arrays of the unseen words, if any.
How S was built (``similarity`` in
``model.json``) is recorded for people, not hashed: the same S built two ways scores alike.

A save replaces the whole folder in one step (:mod:`es_scm.model.saving`): killed at any point,
it leaves the previous model or the new one, never a mix.

A model folder may come from anyone, so a load trusts none of its files (:mod:`es_scm.files`):
each must be a regular file, and not a symbolic link, even one that stays in the folder: es-scm
never writes a link, the refusal comes from the open itself (``O_NOFOLLOW``, so nothing can
swap a link in between a check and the open), and a model is shared by copying its folder or
linking the folder itself (which loads). A named pipe or a device is refused without blocking.
``model.json`` may hold :data:`CONFIG_LIMIT` bytes and ``vocabulary.json``
:data:`~es_scm.model.text.FILE_LIMIT`, checked before they are read; the arrays of
``similarity.npz`` and ``unseen.npz`` are checked against the vocabulary's number of terms and
their size on disk before any is unpacked (:func:`~es_scm.similarity.matrix_files.read_matrix`,
:func:`~es_scm.similarity.unseen.unseen_problem`). Every refusal is one line naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import scipy.sparse as sp

from es_scm.files import UnsafeFileError, open_regular, read_json, read_npz
from es_scm.model.saving import replace_folder, restore_interrupted_save
from es_scm.model.text import FILE_LIMIT, TermWeighting, Tokenizer, Vocabulary
from es_scm.similarity import TermSimilarityMatrix
from es_scm.similarity.matrix_files import read_matrix
from es_scm.similarity.unseen import UnseenTerms, unseen_problem

__all__ = [
    "CONFIG_FILE",
    "content_hash",
    "read_bundle",
    "read_model",
    "write_bundle",
    "write_model",
]

FORMAT = "es-scm-model"
VERSION = 1
_ID_SCHEME = "es-scm-model-id/1"
CONFIG_FILE = "model.json"
VOCABULARY_FILE = "vocabulary.json"
SIMILARITY_FILE = "similarity.npz"
UNSEEN_FILE = "unseen.npz"
MODEL_FILES = (CONFIG_FILE, VOCABULARY_FILE, SIMILARITY_FILE, UNSEEN_FILE)
#: The most ``model.json`` may hold, in bytes (its stop words and settings take kilobytes).
CONFIG_LIMIT = 64 * 2**20


class _Identified(Protocol):
    """What :func:`read_model` makes: something with a content hash."""

    @property
    def model_id(self) -> str: ...


Model = TypeVar("Model", bound=_Identified)


def write_model(path: Path, model: Any) -> None:
    """Write a :class:`~es_scm.model.SoftCosineModel` to the folder ``path``
    (:func:`write_bundle`): its config, with its hybrid settings if it has any, and its parts."""
    hybrid = {"hybrid": model.hybrid} if model.hybrid else {}
    write_bundle(
        path,
        {**model.get_config(), **hybrid},
        model.vocabulary,
        model.similarity_matrix,
        model.model_id,
        model.unseen,
    )


def read_model(
    path: Path,
    make: Callable[..., Model],
    tokenizer: Callable[[str], Iterable[str]] | None = None,
) -> Model:
    """The model saved in ``path``: ``make`` (the model class) called with its parts, and
    checked to hash to its saved ``model_id``.

    ``tokenizer`` is the user tokenizer callable, required iff the model was built with one.

    Raises
    ------
    ValueError
        If the files are not an es-scm model, are damaged, or their content no longer hashes to
        the saved ``model_id``.
    """
    config, vocabulary, matrix, unseen = read_bundle(path)
    try:
        model = make(
            Tokenizer.from_config(config["tokenizer"], tokenizer=tokenizer),
            vocabulary,
            matrix,
            TermWeighting.from_config(config["document_weighting"]),
            TermWeighting.from_config(config["query_weighting"]),
            config.get("hybrid"),
            unseen,
        )
    except KeyError as error:
        raise ValueError(f"{path / CONFIG_FILE} lacks {error}") from None
    model_id = model.model_id
    if model_id != config.get("model_id"):
        raise ValueError(
            f"the model in {path} hashes to {model_id}, not to its saved model_id "
            f"{config.get('model_id')!r}: its files were changed or mixed"
        )
    return model


def write_bundle(
    path: Path,
    config: dict[str, Any],
    vocabulary: Vocabulary,
    matrix: TermSimilarityMatrix,
    model_id: str,
    unseen: UnseenTerms | None = None,
) -> None:
    """Write the files of a model to the folder ``path``, replacing any model there at once.

    The files are written beside ``path`` and flushed, then take its place in one step
    (:func:`~es_scm.model.saving.replace_folder`): a save killed at any point leaves the
    previous model whole, or the new one.

    Raises
    ------
    ValueError
        ``path`` holds other files than a model's (nothing is written).
    """
    document = {
        "format": FORMAT,
        "version": VERSION,
        **config,
        "similarity": matrix.build_info,
        "model_id": model_id,
    }

    def write(folder: Path) -> None:
        (folder / CONFIG_FILE).write_text(
            json.dumps(document, ensure_ascii=False, indent=2, sort_keys=True) + "\n",
            encoding="utf-8",
        )
        vocabulary.save(folder / VOCABULARY_FILE)
        matrix.save(folder / SIMILARITY_FILE)
        if unseen is not None:
            with open(folder / UNSEEN_FILE, "wb") as stream:
                arrays: dict[str, Any] = unseen.arrays()
                np.savez(stream, **arrays)

    replace_folder(path, write, MODEL_FILES)


def read_bundle(
    path: Path,
) -> tuple[dict[str, Any], Vocabulary, TermSimilarityMatrix, UnseenTerms | None]:
    """The ``model.json`` config, the vocabulary, S and the unseen words of a saved model.

    Raises
    ------
    ValueError
        If the files are not an es-scm model, or are damaged.
    """
    restore_interrupted_save(path)
    config_path = path / CONFIG_FILE
    config = _load(config_path, lambda stream: read_json(stream, CONFIG_LIMIT, CONFIG_FILE))
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise ValueError(f"{config_path} is not an es-scm model")
    if config.get("version") != VERSION:
        raise ValueError(f"unsupported es-scm model version {config.get('version')!r}")
    vocabulary = _load(
        path / VOCABULARY_FILE,
        lambda stream: Vocabulary.from_dict(read_json(stream, FILE_LIMIT, VOCABULARY_FILE)),
    )
    n_terms = len(vocabulary.terms)
    matrix = _load(
        path / SIMILARITY_FILE,
        lambda stream: _read_similarity(stream, n_terms),
    )
    unseen = None
    if os.path.lexists(path / UNSEEN_FILE):  # a link is there to be refused, even a broken one
        unseen = _load(path / UNSEEN_FILE, lambda stream: _read_unseen(stream, n_terms))
    return config, vocabulary, matrix, unseen


def _read_similarity(stream: Any, n_terms: int) -> TermSimilarityMatrix:
    matrix, terms, info = read_matrix(stream, n_terms)
    return TermSimilarityMatrix(matrix, terms, build_info=info)


def _read_unseen(stream: Any, n_terms: int) -> UnseenTerms:
    arrays = read_npz(stream, lambda headers: unseen_problem(headers, n_terms), UNSEEN_FILE)
    return UnseenTerms.from_arrays(arrays)


def _load(path: Path, load: Callable[[Any], Any]) -> Any:
    """``load(stream)`` of the model file ``path``, opened if it is a regular file and not a
    link; damage reported as one ValueError that names the file."""
    try:
        with open_regular(path, "a model file") as stream:
            return load(stream)
    except (FileNotFoundError, UnsafeFileError):
        raise
    except (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as error:
        if str(path) in str(error):
            raise ValueError(str(error)) from None
        raise ValueError(f"{path} is damaged ({type(error).__name__}: {error})") from None


def content_hash(
    config: dict[str, Any],
    weightings: tuple[TermWeighting, TermWeighting],
    vocabulary: Vocabulary,
    matrix: TermSimilarityMatrix,
    unseen: UnseenTerms | None = None,
) -> str:
    """The ``model_id``: SHA-256 of what can change a score (see the module docstring)."""
    digest = hashlib.sha256()
    digest.update(_ID_SCHEME.encode("ascii"))
    digest.update(_canonical_json({**config, **_statistics_used(weightings, vocabulary)}))
    canonical = _canonical_csc(matrix.matrix)
    digest.update(_canonical_json(list(canonical.shape)))
    _update_with_array(digest, canonical.data)
    _update_with_array(digest, canonical.indices, np.dtype(np.int64))
    _update_with_array(digest, canonical.indptr, np.dtype(np.int64))
    if unseen is not None:
        for name, array in sorted(unseen.arrays().items()):
            digest.update(name.encode("utf-8"))
            _update_with_array(digest, np.atleast_1d(array))
    return digest.hexdigest()


def _canonical_json(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8")


def _update_with_array(digest: Any, array: np.ndarray, dtype: np.dtype | None = None) -> None:
    array = np.asarray(array, dtype=dtype or array.dtype)
    little_endian = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    digest.update(str(little_endian.dtype.str).encode("ascii"))
    digest.update(len(little_endian).to_bytes(8, "little"))
    digest.update(little_endian.tobytes())


def _canonical_csc(matrix: Any) -> sp.csc_matrix:
    canonical = sp.csc_matrix(matrix, copy=True)
    canonical.sum_duplicates()
    canonical.eliminate_zeros()
    canonical.sort_indices()
    return canonical


def _statistics_used(
    weightings: tuple[TermWeighting, TermWeighting], vocabulary: Vocabulary
) -> dict[str, Any]:
    uses_idf = any(w.scheme == "bm25" or w.idf != "none" for w in weightings)
    uses_length = any(w.scheme == "bm25" for w in weightings)
    statistics: dict[str, Any] = {"terms": vocabulary.terms}
    if uses_idf:
        statistics["num_documents"] = vocabulary.num_documents
        statistics["document_frequencies"] = vocabulary.document_frequencies.tolist()
    if uses_length:
        statistics["num_tokens"] = vocabulary.num_tokens
    return statistics
