"""The sentence-transformers backend: any model sentence-transformers loads, run on PyTorch.

What the numpy backend (:mod:`es_scm.encoder.numpy_backend`) does not compute — a model that is
not BERT-shaped, another pooling, a Dense module, a GPU (``device``), a name sentence-transformers
downloads — :class:`SentenceTransformersBackend` runs with sentence-transformers
(``pip install 'es-scm[sentence-transformers]'``, which brings PyTorch). Texts go through
``SentenceTransformer.encode``; sequences of token ids through the model itself, padded and
masked by length-sorted batches, under ``torch.inference_mode`` (torch chooses its threads).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from es_scm.extras import require

__all__ = ["SentenceTransformersBackend", "installed_version"]


class SentenceTransformersBackend:
    """A ``SentenceTransformer`` loaded from a folder or a name.

    Parameters
    ----------
    source : str
        A local folder, or a name sentence-transformers resolves (its cache, or a download).
    device : str, optional
        torch's device; None lets sentence-transformers choose.
    name : str
        The encoder's name, for messages.

    Raises
    ------
    MissingExtraError
        Without sentence-transformers.
    ValueError
        If the model cannot be loaded (not a folder, not in the cache and not downloadable).
    """

    name = "sentence-transformers"

    def __init__(self, source: str, device: str | None, name: str) -> None:
        library = require("sentence_transformers", f"the sentence encoder {name!r}")
        self.version = str(library.__version__)
        try:
            with _quiet_transformers():
                self.model = library.SentenceTransformer(source, device=device)
        except OSError as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            raise ValueError(
                f"cannot load the sentence encoder {name!r}: {first} (give a local folder, a "
                "packaged model such as all-MiniLM-L6-v2, or a name sentence-transformers can "
                "download)"
            ) from error
        self.tokenizer = self.model.tokenizer

    @property
    def dimension(self) -> int:
        get = getattr(self.model, "get_embedding_dimension", None) or (
            self.model.get_sentence_embedding_dimension
        )
        return int(get())

    @property
    def max_length(self) -> int:
        return int(getattr(self.model, "max_seq_length", None) or 512)

    def vocabulary(self) -> dict[str, int]:
        return dict(self.tokenizer.get_vocab())

    @property
    def unknown_id(self) -> int | None:
        return self.tokenizer.unk_token_id

    def word_pieces(self, words: Sequence[str]) -> list[list[int]]:
        encoded = self.tokenizer(list(words), add_special_tokens=False)
        return [list(ids) for ids in encoded["input_ids"]]

    def special_tokens(self) -> tuple[list[int], list[int]]:
        with_special = list(self.tokenizer("a")["input_ids"])
        without = list(self.tokenizer("a", add_special_tokens=False)["input_ids"])
        for at in range(len(with_special) - len(without) + 1):
            if with_special[at : at + len(without)] == without:
                return with_special[:at], with_special[at + len(without) :]
        raise ValueError("cannot find the special tokens of the encoder's tokenizer")

    def wrap(self, ids: Sequence[int]) -> list[int]:
        """``ids`` within the special tokens, cut to the longest input."""
        prefix, suffix = self.special_tokens()
        room = max(self.max_length - len(prefix) - len(suffix), 1)
        return [*prefix, *list(ids)[:room], *suffix]

    def encode_texts(
        self, texts: Sequence[str], batch_size: int, done: Callable[[int], None]
    ) -> np.ndarray:
        """``SentenceTransformer.encode`` of ``texts``, by chunks (``done(n)`` after each)."""
        vectors = np.zeros((len(texts), self.dimension if texts else 0), dtype=np.float32)
        chunk = max(batch_size * 8, 1)
        for start in range(0, len(texts), chunk):
            part = list(texts[start : start + chunk])
            vectors[start : start + len(part)] = self.model.encode(
                part, batch_size=batch_size, convert_to_numpy=True, show_progress_bar=False
            )
            done(len(part))
        return vectors

    def encode_ids(
        self, sequences: Sequence[Sequence[int]], batch_size: int, done: Callable[[int], None]
    ) -> np.ndarray:
        """The model's vectors of token-id sequences (special tokens included), batched by
        length so that little padding is computed."""
        torch = require("torch", "the sentence-transformers backend")
        order = np.argsort([len(ids) for ids in sequences], kind="stable")
        vectors = np.zeros((len(sequences), self.dimension), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                features = self._features(torch, [sequences[i] for i in rows])
                output = self.model(features)["sentence_embedding"]
                vectors[rows] = output.float().cpu().numpy()
                done(len(rows))
        return vectors

    def _features(self, torch: Any, batch: list[Sequence[int]]) -> dict[str, Any]:
        """The model's input for a batch of id sequences: padded ids and attention mask."""
        width = max(len(ids) for ids in batch)
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, sequence in enumerate(batch):
            ids[row, : len(sequence)] = torch.tensor(list(sequence), dtype=torch.long)
            mask[row, : len(sequence)] = 1
        features = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.tokenizer("a"):
            features["token_type_ids"] = torch.zeros_like(ids)
        device = getattr(self.model, "device", None)
        return {key: value.to(device) for key, value in features.items()} if device else features

    def close(self) -> None:
        """Nothing to stop (torch keeps its own threads)."""


def installed_version() -> str | None:
    """sentence-transformers' version, if it is installed (without importing torch)."""
    from importlib import metadata

    try:
        return metadata.version("sentence-transformers")
    except metadata.PackageNotFoundError:
        return None


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
