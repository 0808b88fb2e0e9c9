r"""A BERT encoder's forward pass in numpy: token ids → the last layer's hidden states.

What sentence-transformers runs through PyTorch for a BERT-shaped model (all-MiniLM-L6-v2: 6
layers, hidden size :math:`d = 384`, 12 heads of 32, intermediate size 1536), computed here in
float32 with numpy's BLAS, from the weights of a ``model.safetensors`` file. For a sequence of
:math:`L` token ids :math:`t_1 \dots t_L` (special tokens included, token type 0):

.. math::

    X^{(0)} = \mathrm{LN}(E_{t} + P_{1..L} + T_0)

and each layer :math:`X \mapsto Y`:

.. math::

    A &= \mathrm{LN}\bigl(X + \mathrm{concat}_h\,
         \mathrm{softmax}\bigl(Q_h K_h^\top / \sqrt{d_h}\bigr) V_h \, W_O + b_O\bigr),
         \qquad [Q\; K\; V] = X W_{QKV} + b_{QKV} \\
    Y &= \mathrm{LN}\bigl(A + \mathrm{GELU}(A W_I + b_I) W_2 + b_2\bigr)

with :math:`\mathrm{LN}(x) = \gamma (x - \bar x) / \sqrt{\sigma^2(x) + \varepsilon} + \beta` over
the hidden axis (ε from ``config.json``) and :math:`\mathrm{GELU}(x) = x\,\Phi(x) = \tfrac{x}{2}
(1 + \mathrm{erf}(x / \sqrt 2))`.

Efficiency
    A batch holds sequences of one length, so no position is padding and no attention mask is
    computed (the caller groups sequences by length). The three projections of the attention
    are one product (:math:`W_{QKV}`, 384 × 1152), the attention's scale is folded into
    :math:`W_Q` and :math:`b_Q`, the heads are read from that product through strides (no
    copy), and every elementwise step runs in place in buffers kept per thread and reused from
    one batch to the next; the GELU runs by blocks of rows that stay in the core's cache.
erf
    :math:`\mathrm{erf}` is PyTorch's own CPU approximation (Abramowitz and Stegun 7.1.26,
    absolute error below :math:`1.5 \cdot 10^{-7}`), written so that
    :math:`\mathrm{GELU}(x) = \max(x, 0) - |x|\, u(x)` with
    :math:`u = \tfrac12 t\, r(t)\, e^{-x^2/2}`, :math:`t = 1 / (1 + p |x| / \sqrt 2)`: the same
    function as PyTorch's, in fewer passes (scipy's ``erf`` is exact but took three times as
    long as all the products of a layer).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Bert", "BertConfig", "UnsupportedModelError", "gelu_"]

_F32 = np.float32
# Abramowitz and Stegun 7.1.26, as PyTorch's vectorized erf has them; the coefficients of r are
# halved here (exact: a power of two), which gives u = t r(t) e^{-x²/2} / 2 directly
_P = 0.3275911
_R = tuple(
    _F32(0.5 * c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)
)
_P_OVER_SQRT2 = _F32(_P / math.sqrt(2.0))
#: Rows of the intermediate activations (of 1536 floats) the GELU works on at a time: ~200 KB
#: a buffer, so that its passes stay in the core's cache.
_GELU_ROWS = 32


class UnsupportedModelError(ValueError):
    """A model this forward pass does not compute (not BERT-shaped), with the reason."""


@dataclass(frozen=True)
class BertConfig:
    """The shape of a BERT encoder, from its ``config.json``.

    Raises
    ------
    UnsupportedModelError
        For a model that is not a BERT of absolute positions and the erf GELU.
    """

    hidden: int
    heads: int
    layers: int
    intermediate: int
    eps: float
    max_positions: int

    @classmethod
    def read(cls, path: Path) -> BertConfig:
        """The configuration of ``path`` (a ``config.json``)."""
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise UnsupportedModelError(f"cannot read {path.name}: {error}") from error
        if not isinstance(config, Mapping):
            raise UnsupportedModelError(f"{path.name} is not a JSON object")
        return cls.of(config)

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> BertConfig:
        """The configuration of a ``config.json``'s contents."""
        checks = {
            "model_type": ("bert",),
            "hidden_act": ("gelu",),
            "position_embedding_type": ("absolute", None),
        }
        for key, allowed in checks.items():
            if config.get(key) not in allowed:
                raise UnsupportedModelError(
                    f"{key} is {config.get(key)!r}, not {' or '.join(map(repr, allowed))}"
                )
        try:
            shape = cls(
                hidden=int(config["hidden_size"]),
                heads=int(config["num_attention_heads"]),
                layers=int(config["num_hidden_layers"]),
                intermediate=int(config["intermediate_size"]),
                eps=float(config.get("layer_norm_eps", 1e-12)),
                max_positions=int(config["max_position_embeddings"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise UnsupportedModelError(f"config.json lacks a valid {error}") from error
        if shape.hidden % shape.heads:
            raise UnsupportedModelError(
                f"hidden_size {shape.hidden} is not a multiple of its {shape.heads} heads"
            )
        return shape

    @property
    def head_size(self) -> int:
        return self.hidden // self.heads


@dataclass(frozen=True)
class _Layer:
    qkv: np.ndarray  # (d, 3d): [W_Q / √d_h, W_K, W_V] of each share's heads, for x @ W
    qkv_bias: np.ndarray
    out: np.ndarray  # (d, d)
    out_bias: np.ndarray
    norm1: tuple[np.ndarray, np.ndarray]
    inner: np.ndarray  # (d, intermediate)
    inner_bias: np.ndarray
    down: np.ndarray  # (intermediate, d)
    down_bias: np.ndarray
    norm2: tuple[np.ndarray, np.ndarray]


class _Buffers:
    """One thread's buffers, grown to the largest batch it has seen, and views of them sized for
    each batch (no allocation per batch once grown)."""

    def __init__(self) -> None:
        self.tokens = 0
        self.scores = 0
        self.arrays: dict[str, np.ndarray] = {}

    def views(
        self, config: BertConfig, shares: int, tokens: int, scores: int
    ) -> dict[str, np.ndarray]:
        if tokens > self.tokens or scores > self.scores:
            self.tokens, self.scores = max(tokens, self.tokens), max(scores, self.scores)
            d, n = config.hidden, self.tokens
            rows = min(n, _GELU_ROWS)
            self.arrays = {
                "x": np.empty((n, d), _F32),
                "y": np.empty((n, d), _F32),
                "qkv": np.empty((n, 3 * d), _F32),
                "context": np.empty((n, d), _F32),
                "inner": np.empty((n, config.intermediate), _F32),
                "parts": np.empty(shares * n * d, _F32),
                "scores": np.empty(self.scores, _F32),
                "column": np.empty((n, 1), _F32),
                "t": np.empty((rows, config.intermediate), _F32),
                "u": np.empty((rows, config.intermediate), _F32),
            }
        a = self.arrays
        sized = {name: a[name][:tokens] for name in ("x", "y", "qkv", "context", "inner", "column")}
        sized["scores"] = a["scores"][:scores]
        sized["parts"] = a["parts"][: shares * tokens * config.hidden]
        sized["t"], sized["u"] = a["t"], a["u"]
        return sized


class Bert:
    """A BERT encoder's weights, ready for :meth:`hidden` (module docstring).

    Parameters
    ----------
    weights : mapping of str to numpy.ndarray
        The tensors of a ``BertModel`` (``embeddings.word_embeddings.weight``, ...; a ``bert.``
        prefix, as a masked-language model saves them, is dropped).
    config : BertConfig
        Its shape.
    shares : int
        The shares of each step that :meth:`hidden_shared` gives to as many threads: the heads,
        and the columns of the feed-forward layer, in that many groups (the largest number up to
        this that divides both).

    Raises
    ------
    UnsupportedModelError
        For weights that lack a tensor of that shape, or have another shape.
    """

    def __init__(
        self, weights: Mapping[str, np.ndarray], config: BertConfig, *, shares: int = 1
    ) -> None:
        self.config = config
        self.shares = max(
            n
            for n in range(1, max(shares, 1) + 1)
            if config.heads % n == 0 and config.intermediate % n == 0
        )
        prefix = "" if "embeddings.word_embeddings.weight" in weights else "bert."
        d, scale = config.hidden, _F32(1.0 / math.sqrt(config.head_size))

        def get(name: str, *shape: int) -> np.ndarray:
            array = weights.get(prefix + name)
            if array is None:
                raise UnsupportedModelError(f"the weights lack {name}")
            if shape and tuple(array.shape) != shape:
                raise UnsupportedModelError(
                    f"{name} has the shape {tuple(array.shape)}, not {shape}"
                )
            return np.asarray(array, dtype=_F32)

        def norm(name: str) -> tuple[np.ndarray, np.ndarray]:
            return get(f"{name}.weight", d).copy(), get(f"{name}.bias", d).copy()

        words = get("embeddings.word_embeddings.weight")
        if words.ndim != 2 or words.shape[1] != d:
            raise UnsupportedModelError(f"the word embeddings have the shape {words.shape}")
        self.words = np.ascontiguousarray(words)
        positions = get("embeddings.position_embeddings.weight", config.max_positions, d)
        types = get("embeddings.token_type_embeddings.weight")
        # token type 0 for every position of a single text: added once, to the positions
        self.positions = np.ascontiguousarray(positions + types[0])
        self.norm0 = norm("embeddings.LayerNorm")
        self.layers = []
        for i in range(config.layers):
            p, inner = f"encoder.layer.{i}.", config.intermediate
            attention = f"{p}attention.self."
            # [Q K V] of the heads of share 0, then of share 1…: each share's columns together
            q = get(f"{attention}query.weight", d, d) * scale
            k = get(f"{attention}key.weight", d, d)
            v = get(f"{attention}value.weight", d, d)
            q_bias = get(f"{attention}query.bias", d) * scale
            k_bias, v_bias = get(f"{attention}key.bias", d), get(f"{attention}value.bias", d)
            rows = np.array_split(np.arange(d), self.shares)
            qkv = np.concatenate([m[r] for r in rows for m in (q, k, v)])
            qkv_bias = np.concatenate([b[r] for r in rows for b in (q_bias, k_bias, v_bias)])
            self.layers.append(
                _Layer(
                    qkv=np.ascontiguousarray(qkv.T),
                    qkv_bias=qkv_bias.astype(_F32),
                    out=np.ascontiguousarray(get(f"{p}attention.output.dense.weight", d, d).T),
                    out_bias=get(f"{p}attention.output.dense.bias", d).copy(),
                    norm1=norm(f"{p}attention.output.LayerNorm"),
                    inner=np.ascontiguousarray(get(f"{p}intermediate.dense.weight", inner, d).T),
                    inner_bias=get(f"{p}intermediate.dense.bias", inner).copy(),
                    down=np.ascontiguousarray(get(f"{p}output.dense.weight", d, inner).T),
                    down_bias=get(f"{p}output.dense.bias", d).copy(),
                    norm2=norm(f"{p}output.LayerNorm"),
                )
            )
        self._local = threading.local()

    @property
    def vocabulary_size(self) -> int:
        return int(self.words.shape[0])

    def hidden(self, ids: np.ndarray) -> np.ndarray:
        """The last layer's hidden states of a batch of sequences of one length, in the calling
        thread.

        Parameters
        ----------
        ids : numpy.ndarray
            ``(B, L)`` token ids, special tokens included, ``L`` at most ``max_positions``.

        Returns
        -------
        numpy.ndarray
            float32 ``(B, L, hidden)``: a view of this thread's buffers, valid until the
            thread's next call (pool it or copy it first).
        """
        c, (batch, length) = self.config, ids.shape
        b = self._buffers(batch, length)
        x, y, qkv, context, inner, column = (
            b[name] for name in ("x", "y", "qkv", "context", "inner", "column")
        )
        self._embed(ids, x, column)
        # the heads of Q, K and V are strided views of the fused product: (B, S, heads/S, L, size)
        shares, per_share = self.shares, c.heads // self.shares
        split = qkv.reshape(batch, length, shares, 3, per_share, c.head_size)
        q = split[:, :, :, 0].transpose(0, 2, 3, 1, 4)
        k_t = split[:, :, :, 1].transpose(0, 2, 3, 4, 1)
        v = split[:, :, :, 2].transpose(0, 2, 3, 1, 4)
        scores = b["scores"].reshape(batch, shares, per_share, length, length)
        context_heads = context.reshape(batch, length, shares, per_share, c.head_size)
        context_heads = context_heads.transpose(0, 2, 3, 1, 4)
        for layer in self.layers:
            np.matmul(x, layer.qkv, out=qkv)
            qkv += layer.qkv_bias
            np.matmul(q, k_t, out=scores)
            _softmax(scores)
            np.matmul(scores, v, out=context_heads)
            np.matmul(context, layer.out, out=y)
            y += layer.out_bias
            y += x
            _layer_norm(y, layer.norm1, c.eps, column)
            np.matmul(y, layer.inner, out=inner)
            gelu_(inner, layer.inner_bias, b["t"], b["u"])
            np.matmul(inner, layer.down, out=x)
            x += layer.down_bias
            x += y
            _layer_norm(x, layer.norm2, c.eps, column)
        return x.reshape(batch, length, c.hidden)

    def hidden_shared(
        self, ids: np.ndarray, run: Callable[[Sequence[Callable[[], None]]], None]
    ) -> np.ndarray:
        """:meth:`hidden`, each step's work given to ``run`` in :attr:`shares` tasks.

        ``run(tasks)`` runs every task and returns (threads may share them:
        :class:`~es_scm.encoder.threads.Team`). Each layer is two such steps: the attention of
        a share's heads with their part of the output projection (a product over a slice of its
        rows, summed after), then a share's columns of the feed-forward layer and their part of
        its second product; layer norms and sums run in the calling thread between them. The
        result is :meth:`hidden`'s, to float32's rounding (sums in another order).
        """
        c, (batch, length) = self.config, ids.shape
        b = self._buffers(batch, length)
        x, y, column = b["x"], b["y"], b["column"]
        self._embed(ids, x, column)
        n, per_share, size = self.shares, c.heads // self.shares, c.head_size
        width, inner_width = c.hidden // n, c.intermediate // n
        parts = b["parts"].reshape(n, batch * length, c.hidden)
        views = []
        for share in range(n):
            qkv = b["qkv"][:, share * 3 * width : (share + 1) * 3 * width]
            split = qkv.reshape(batch, length, 3, per_share, size)
            context = b["context"][:, share * width : (share + 1) * width]
            scores = b["scores"].reshape(n, batch, per_share, length, length)[share]
            rows = slice(share * width, (share + 1) * width)
            columns = slice(share * inner_width, (share + 1) * inner_width)
            inner = b["inner"][:, columns]
            scratch = (
                b["t"].reshape(n, -1, inner_width)[share],
                b["u"].reshape(n, -1, inner_width)[share],
            )
            views.append((qkv, split, context, scores, rows, columns, inner, scratch))

        def attention(layer: _Layer, share: int) -> Callable[[], None]:
            qkv, split, context, scores, rows, _, _, _ = views[share]
            qkv_columns = slice(share * 3 * width, (share + 1) * 3 * width)

            def task() -> None:
                np.matmul(x, layer.qkv[:, qkv_columns], out=qkv)
                np.add(qkv, layer.qkv_bias[qkv_columns], out=qkv)
                np.matmul(
                    split[:, :, 0].transpose(0, 2, 1, 3),
                    split[:, :, 1].transpose(0, 2, 3, 1),
                    out=scores,
                )
                _softmax(scores)
                heads = context.reshape(batch, length, per_share, size).transpose(0, 2, 1, 3)
                np.matmul(scores, split[:, :, 2].transpose(0, 2, 1, 3), out=heads)
                np.matmul(context, layer.out[rows], out=parts[share])

            return task

        def feed_forward(layer: _Layer, share: int) -> Callable[[], None]:
            _, _, _, _, _, columns, inner, scratch = views[share]

            def task() -> None:
                np.matmul(y, layer.inner[:, columns], out=inner)
                gelu_(inner, layer.inner_bias[columns], *scratch)
                np.matmul(inner, layer.down[columns], out=parts[share])

            return task

        for layer in self.layers:
            run([attention(layer, share) for share in range(n)])
            np.sum(parts, axis=0, out=y)
            y += layer.out_bias
            y += x
            _layer_norm(y, layer.norm1, c.eps, column)
            run([feed_forward(layer, share) for share in range(n)])
            np.sum(parts, axis=0, out=x)
            x += layer.down_bias
            x += y
            _layer_norm(x, layer.norm2, c.eps, column)
        return x.reshape(batch, length, c.hidden)

    def _buffers(self, batch: int, length: int) -> dict[str, np.ndarray]:
        """This thread's buffers, as views for a batch of ``batch`` sequences of ``length``."""
        c = self.config
        if length > c.max_positions:
            raise ValueError(f"a sequence of {length} tokens is longer than {c.max_positions}")
        buffers = getattr(self._local, "buffers", None)
        if buffers is None:
            buffers = self._local.buffers = _Buffers()
        tokens = batch * length
        return buffers.views(c, self.shares, tokens, batch * c.heads * length * length)

    def _embed(self, ids: np.ndarray, x: np.ndarray, column: np.ndarray) -> None:
        """``x`` ← LN(word + position + token type 0) of ``ids``."""
        batch, length = ids.shape
        np.take(self.words, ids.reshape(-1), axis=0, out=x)
        positioned = x.reshape(batch, length, self.config.hidden)
        positioned += self.positions[:length]
        _layer_norm(x, self.norm0, self.config.eps, column)


def _layer_norm(
    x: np.ndarray, norm: tuple[np.ndarray, np.ndarray], eps: float, column: np.ndarray
) -> None:
    """``x`` ← LN(x) over its rows, in place (``column``: a ``(rows, 1)`` buffer)."""
    gamma, beta = norm
    np.mean(x, axis=1, keepdims=True, out=column)
    x -= column
    np.einsum("ij,ij->i", x, x, out=column[:, 0])
    column *= _F32(1.0 / x.shape[1])
    column += _F32(eps)
    np.sqrt(column, out=column)
    x /= column
    x *= gamma
    x += beta


def _softmax(scores: np.ndarray) -> None:
    """Softmax over the last axis, in place."""
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)


def gelu_(h: np.ndarray, bias: np.ndarray, t: np.ndarray, u: np.ndarray) -> None:
    """``h`` ← GELU(h + bias), in place, by blocks of ``len(t)`` rows (module docstring).

    ``t`` and ``u`` are scratch buffers of at least one row of ``h``'s width.
    """
    rows = len(t)
    for start in range(0, len(h), rows):
        x = h[start : start + rows]
        n = len(x)
        a, r = t[:n], u[:n]
        x += bias
        np.abs(x, out=a)
        a *= _P_OVER_SQRT2
        a += _F32(1.0)
        np.reciprocal(a, out=a)  # t = 1 / (1 + p|x|/√2)
        np.multiply(a, _R[0], out=r)
        for coefficient in _R[1:]:
            r += coefficient
            r *= a
        # r = t r(t) / 2; now u = r e^{-x²/2} |x|, and GELU = max(x, 0) - u
        np.multiply(x, x, out=a)
        a *= _F32(-0.5)
        np.exp(a, out=a)
        r *= a
        np.abs(x, out=a)
        r *= a
        np.maximum(x, _F32(0.0), out=x)
        x -= r
