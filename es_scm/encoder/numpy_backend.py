r"""The numpy backend: a sentence-transformers BERT folder run without PyTorch.

:class:`NumpyBackend` computes what sentence-transformers computes for a folder that
:func:`~es_scm.encoder.folder.read_folder` accepts: the texts tokenized by the folder's own
``tokenizer.json`` (Hugging Face ``tokenizers``, the tokenizer sentence-transformers itself runs,
cut to the same longest input), the BERT's forward pass in numpy (:mod:`es_scm.encoder.bert`,
weights read by ``safetensors``' numpy loader), the folder's pooling of the last layer and its
normalization. Neither ``tokenizers`` nor ``safetensors`` is imported before a model is loaded.

Batches
    Sequences are grouped by length: a batch holds sequences of one length, so that nothing is
    padded or masked, and up to :data:`BATCH_TOKENS` tokens (a vocabulary's words of five
    pieces go 800 to a batch), so that every product is large enough for BLAS to run at full
    speed.
Threads
    With several batches, each core's thread encodes batches of its own while BLAS is held to one
    thread (``threadpoolctl``): every step of the forward pass — the products and the GELU,
    layer norms and softmax numpy runs on one core — is spread over the cores, with no
    synchronisation inside a batch. A single batch (one query) runs in the calling thread, with
    BLAS on every core.

The vectors equal sentence-transformers' to float32's rounding (``scripts/compare_encoders.py``;
a test holds them to vectors recorded from sentence-transformers).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from es_scm.encoder.bert import Bert
from es_scm.encoder.folder import FolderModel
from es_scm.encoder.threads import Team, cores, serial_blas
from es_scm.extras import require

__all__ = ["BACKEND_VERSION", "BATCH_TOKENS", "NumpyBackend"]

logger = logging.getLogger(__name__)

#: Tokens (sequences × their length) in a batch of the forward pass, at most.
BATCH_TOKENS = 4096
#: Changes when the numpy backend's arithmetic changes (its vectors are cached under it).
BACKEND_VERSION = 1


class NumpyBackend:
    """A sentence-transformers BERT folder, encoded with numpy (module docstring).

    Parameters
    ----------
    model : FolderModel
        The folder, as :func:`~es_scm.encoder.folder.read_folder` read it.
    threads : int, optional
        Threads that encode batches side by side (default: the CPUs of the process).

    Raises
    ------
    MissingExtraError
        Without ``tokenizers`` or ``safetensors`` (``pip install 'es-scm[encoder]'``).
    UnsupportedModelError
        When the weights are not those of the folder's configuration.
    """

    name = "numpy"

    def __init__(self, model: FolderModel, *, threads: int | None = None) -> None:
        tokenizers = require("tokenizers", "the encoder's tokenizer")
        loader = require("safetensors.numpy", "the encoder's weights")
        self.folder = model
        self.threads = threads or cores()
        tokenizer = tokenizers.Tokenizer.from_str(_tokenizer_json(model))
        # tokenizer.json may carry its own padding and truncation (all-MiniLM-L6-v2's pads
        # and cuts at 128): sentence-transformers' tokenizer sets its own per call
        tokenizer.no_padding()
        tokenizer.no_truncation()
        if model.lower_case and not _lowercases(tokenizer):  # as sentence-transformers adds it
            normalizers = tokenizers.normalizers
            parts = [normalizers.Lowercase()]
            if tokenizer.normalizer is not None:
                parts.append(tokenizer.normalizer)
            tokenizer.normalizer = normalizers.Sequence(parts)
        self.tokenizer = tokenizer
        weights = loader.load_file(os.fspath(model.weights))
        self.bert = Bert(weights, model.config, shares=self.threads)
        self._team = Team(self.bert.shares - 1)
        vocabulary = tokenizer.get_vocab(with_added_tokens=True)
        if max(vocabulary.values(), default=-1) >= self.bert.vocabulary_size:
            raise ValueError(
                f"the tokenizer of {model.folder} has ids up to {max(vocabulary.values())}, "
                f"its model {self.bert.vocabulary_size} word embeddings"
            )
        self._vocabulary = vocabulary
        self.prefix, self.suffix = _special_tokens(tokenizer)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = os.getpid()
        self._pool_lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return self.folder.dimension

    @property
    def max_length(self) -> int:
        return self.folder.max_length

    def vocabulary(self) -> dict[str, int]:
        return dict(self._vocabulary)

    @property
    def unknown_id(self) -> int | None:
        token = getattr(self.tokenizer.model, "unk_token", None)
        return None if token is None else self.tokenizer.token_to_id(token)

    def word_pieces(self, words: Sequence[str]) -> list[list[int]]:
        """The ids of each text's tokens, without special tokens, uncut."""
        if len(words) == 1:  # a query: no batch to spread over threads
            return [self.tokenizer.encode(words[0], add_special_tokens=False).ids]
        return [e.ids for e in self.tokenizer.encode_batch(list(words), add_special_tokens=False)]

    def special_tokens(self) -> tuple[list[int], list[int]]:
        return list(self.prefix), list(self.suffix)

    def wrap(self, ids: Sequence[int]) -> list[int]:
        """``ids`` within the special tokens, cut to the longest input as the tokenizer cuts a
        text (its end dropped; one sequence: ``longest_first`` cuts it alone)."""
        room = max(self.max_length - len(self.prefix) - len(self.suffix), 1)
        return [*self.prefix, *list(ids)[:room], *self.suffix]

    def encode_texts(
        self, texts: Sequence[str], batch_size: int, done: Callable[[int], None]
    ) -> np.ndarray:
        """The vectors of ``texts`` (pooled, normalized if the folder normalizes)."""
        sequences = [self.wrap(ids) for ids in self.word_pieces(texts)] if texts else []
        return self.encode_ids(sequences, batch_size, done)

    def encode_ids(
        self, sequences: Sequence[Sequence[int]], batch_size: int, done: Callable[[int], None]
    ) -> np.ndarray:
        """The vectors of token-id sequences, special tokens included (module docstring).

        ``batch_size`` is the most sequences a batch holds; ``done(n)`` is called after each
        batch of ``n`` sequences.
        """
        vectors = np.zeros((len(sequences), self.dimension), dtype=np.float32)
        batches = list(_batches(sequences, batch_size))
        parallel = self.threads > 1 and serial_blas.available()
        if len(batches) == 1 and parallel:  # a query: the threads share each step
            ((rows, ids),) = batches
            with serial_blas(), self._team.session() as free:
                vectors[rows] = self._pooled(ids, self._team.run if free else _run_here)
            done(len(rows))
        elif not parallel:  # one thread: BLAS's too, where it can be told
            with serial_blas() if serial_blas.available() else contextlib.nullcontext():
                for rows, ids in batches:
                    vectors[rows] = self._pooled(ids)
                    done(len(rows))
        else:  # each thread encodes batches of its own
            with serial_blas():
                pending: list[tuple[np.ndarray, Future[np.ndarray]]] = [
                    (rows, self._executor().submit(self._pooled, ids)) for rows, ids in batches
                ]
                try:
                    for rows, future in pending:
                        vectors[rows] = future.result()
                        done(len(rows))
                finally:
                    for _, future in pending:
                        future.cancel()
        return vectors

    def _pooled(
        self, ids: np.ndarray, run: Callable[[Sequence[Callable[[], None]]], None] | None = None
    ) -> np.ndarray:
        """The pooled (and maybe normalized) vectors of a batch of one length (``run``: the
        threads that share each step, :meth:`Bert.hidden_shared`; None: this thread alone)."""
        # a view of this thread's buffers
        hidden = self.bert.hidden(ids) if run is None else self.bert.hidden_shared(ids, run)
        parts = [_pool(mode, hidden) for mode in self.folder.pooling]
        pooled = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
        if self.folder.normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled /= np.maximum(norms, np.float32(1e-12))  # torch's normalize: ε 1e-12
        return pooled

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            # a forked child inherits the pool but not its threads: it makes its own
            if self._pool is None or self._pool_pid != os.getpid():
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="es-scm-encoder")
                self._pool_pid = os.getpid()
            return self._pool

    def close(self) -> None:
        """Stop the threads (they are idle between calls; a later call starts them again)."""
        with self._pool_lock:
            if self._pool is not None:
                self._pool.shutdown()
                self._pool = None


def _run_here(tasks: Sequence[Callable[[], None]]) -> None:
    """Run ``tasks`` in the calling thread (the team is busy with another caller's query)."""
    for task in tasks:
        task()


def _batches(
    sequences: Sequence[Sequence[int]], batch_size: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(rows, ids) batches of sequences of one length, up to :data:`BATCH_TOKENS` tokens."""
    by_length: dict[int, list[int]] = defaultdict(list)
    for row, sequence in enumerate(sequences):
        by_length[len(sequence)].append(row)
    for length in sorted(by_length):
        rows = by_length[length]
        size = max(min(batch_size, BATCH_TOKENS // max(length, 1)), 1)
        for start in range(0, len(rows), size):
            chunk = np.asarray(rows[start : start + size], dtype=np.int64)
            batch = np.asarray([sequences[i] for i in chunk], dtype=np.int64)
            yield chunk, batch.reshape(len(chunk), length)


def _pool(mode: str, hidden: np.ndarray) -> np.ndarray:
    """One pooling of ``(B, L, d)`` hidden states of unpadded sequences: ``(B, d)``, a copy."""
    length = hidden.shape[1]
    if mode == "mean":
        return hidden.mean(axis=1)
    if mode == "cls":
        return hidden[:, 0].copy()
    if mode == "max":
        return hidden.max(axis=1)
    if mode == "mean_sqrt_len_tokens":
        return hidden.sum(axis=1) / np.float32(np.sqrt(length))
    if mode == "lasttoken":
        return hidden[:, -1].copy()
    if mode == "weightedmean":  # token i weighs i (1-based)
        weights = np.arange(1, length + 1, dtype=np.float32)
        return np.einsum("bld,l->bd", hidden, weights) / weights.sum()
    raise ValueError(f"unknown pooling {mode!r}")


def _tokenizer_json(model: FolderModel) -> str:
    """``tokenizer.json`` as transformers' tokenizer of the folder reads it: its
    ``BertNormalizer`` set from ``tokenizer_config.json`` (:attr:`FolderModel.normalizer`)."""
    content = json.loads(model.tokenizer.read_text(encoding="utf-8"))
    normalizer = content.get("normalizer")
    if (
        model.normalizer
        and isinstance(normalizer, dict)
        and normalizer.get("type") == "BertNormalizer"
    ):
        normalizer.update(model.normalizer)
    return json.dumps(content)


def _lowercases(tokenizer: Any) -> bool:
    normalizer = tokenizer.normalizer
    return normalizer is not None and normalizer.normalize_str("A") == "a"


def _special_tokens(tokenizer: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ids the tokenizer puts before and after a text's own (found on a probe word)."""
    with_special = tokenizer.encode("a").ids
    without = tokenizer.encode("a", add_special_tokens=False).ids
    for at in range(len(with_special) - len(without) + 1):
        if with_special[at : at + len(without)] == without:
            return tuple(with_special[:at]), tuple(with_special[at + len(without) :])
    raise ValueError("cannot find the tokenizer's special tokens")
