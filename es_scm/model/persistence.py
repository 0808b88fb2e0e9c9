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
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from es_scm.model.saving import replace_folder, restore_interrupted_save
from es_scm.model.text import Tokenizer
from es_scm.model.vocabulary import Vocabulary
from es_scm.model.weighting import TermWeighting
from es_scm.similarity import TermSimilarityMatrix
from es_scm.similarity.unseen import UnseenTerms

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

Model = TypeVar("Model")


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
                np.savez(stream, **unseen.arrays())

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
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{config_path} is damaged: not valid JSON ({error})") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise ValueError(f"{config_path} is not an es-scm model")
    if config.get("version") != VERSION:
        raise ValueError(f"unsupported es-scm model version {config.get('version')!r}")
    vocabulary = _load(path / VOCABULARY_FILE, Vocabulary.load)
    matrix = _load(path / SIMILARITY_FILE, TermSimilarityMatrix.load)
    unseen = _load(path / UNSEEN_FILE, _load_unseen) if (path / UNSEEN_FILE).exists() else None
    return config, vocabulary, matrix, unseen


def _load_unseen(path: Path) -> UnseenTerms:
    with np.load(path, allow_pickle=False) as archive:
        return UnseenTerms.from_arrays({key: archive[key] for key in archive.files})


def _load(path: Path, load: Callable[[Path], Any]) -> Any:
    """``load(path)``, with damage reported as one ValueError that names the file."""
    try:
        return load(path)
    except FileNotFoundError:
        raise
    except (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as error:
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
