"""Term weighting: the diagonal change-of-basis matrix W of the soft vector space model.

In the paper's notation (Definition 3.1) a document with term counts x is represented by ``Wx``,
and the SCM is computed from ``Wx`` and S. A :class:`TermWeighting` computes the non-zero entries
of ``Wx`` for every row (document) of a count matrix. The weight of term t in a document with
counts tf(t) is

    w(t) = tf_weight(tf(t)) · idf(t)                      (``scheme="smart"``)

with the local (tf) component

- ``"raw"``:       tf
- ``"log"``:       1 + log_b(tf), base b = ``log_base`` (e by default; 10 in Manning et al.)
- ``"binary"``:    1
- ``"augmented"``: a + (1 − a) · tf / max tf, where max tf is the largest count in the same
  document and a = ``augmentation`` (0.5 by default; a = 0 gives plain tf / max tf)

and the global (idf) component, with N documents and document frequency df(t):

- ``"none"``:    1
- ``"natural"``: ln(N / df)
- ``"log2"``:    log2(N / df)
- ``"smooth"``:  ln(1 + N / df), which stays positive even for a term in every document

All of these are zero for tf = 0, so sparsity is preserved. For ``scheme="bm25"`` the weight is
Okapi BM25's per-term score, with document length |d| = Σ tf (over vocabulary terms) and the
average length avgdl taken from the vocabulary (:attr:`Vocabulary.average_document_length`):

    w(t) = idf_bm25(t) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · |d| / avgdl)),
    idf_bm25(t) = ln(1 + (N − df + 0.5) / (df + 0.5))      (Lucene's form, always positive)

There is deliberately no L2 normalization step: the SCM normalizes by the soft norm √(xᵀSx).
Weights are non-negative, which together with a non-negative S keeps xᵀSx ≥ 0 (§3 of the paper).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from es_scm.defaults import DEFAULT_WEIGHTING
from es_scm.model.vocabulary import Vocabulary
from es_scm.validation import Interval, Options, check

__all__ = [
    "IDF_SCHEMES",
    "SCHEMES",
    "TF_SCHEMES",
    "Role",
    "TermWeighting",
    "WeightingLike",
    "as_weighting",
    "query_weighting_for",
]

SCHEMES = ("smart", "bm25")
TF_SCHEMES = ("raw", "log", "binary", "augmented")
IDF_SCHEMES = ("none", "natural", "log2", "smooth")

_DEFAULTS: dict[str, Any] = {
    "tf": "log",
    "idf": "smooth",
    "augmentation": 0.5,
    "log_base": math.e,
    "k1": 1.2,
    "b": 0.75,
}


_AUGMENTATION = Interval(float, 0.0, 1.0, closed="left")
_LOG_BASE = Interval(float, 1.0, math.inf, closed="neither")
_K1 = Interval(float, 0.0, math.inf, closed="left")
_B = Interval(float, 0.0, 1.0)
_SPEC_HELP = (
    "TF-IDF with TF in raw/log/binary/augmented and IDF in none/natural/log2/smooth "
    "(e.g. log-smooth), optionally with :key=value options (log_base, augmentation), "
    "or bm25[:k1=1.2,b=0.75]"
)


class TermWeighting:
    """SMART-style tf·idf weights or BM25 document weights for the rows of a count matrix.

    Parameters
    ----------
    tf : {"raw", "log", "binary", "augmented"}, default="log"
        Local (term-frequency) component; see the module docstring for the formulas.
    idf : {"none", "natural", "log2", "smooth"}, default="smooth"
        Global (inverse document frequency) component.
    scheme : {"smart", "bm25"}, default="smart"
        ``"bm25"`` ignores ``tf``/``idf`` and uses Okapi BM25 with ``k1`` and ``b``.
    augmentation : float, default=0.5
        The constant a in [0, 1) of ``tf="augmented"``: a + (1 − a)·tf/max tf.
    log_base : float, default=math.e
        Base of the logarithm in ``tf="log"``: 1 + log_base(tf); must be > 1.
    k1 : float, default=1.2
        BM25 term-frequency saturation, >= 0.
    b : float, default=0.75
        BM25 length normalization, in [0, 1].

    Examples
    --------
    >>> TermWeighting(tf="raw", idf="natural")
    TermWeighting(tf='raw', idf='natural')
    >>> TermWeighting.from_spec("bm25:k1=0.9,b=0.4")
    TermWeighting(scheme='bm25', k1=0.9, b=0.4)
    >>> TermWeighting().to_spec()
    'log-smooth'
    """

    def __init__(
        self,
        tf: str = "log",
        idf: str = "smooth",
        *,
        scheme: str = "smart",
        augmentation: float = 0.5,
        log_base: float = math.e,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        self.scheme = check(scheme, "scheme", Options(SCHEMES))
        self.tf = check(tf, "tf", Options(TF_SCHEMES))
        self.idf = check(idf, "idf", Options(IDF_SCHEMES))
        self.augmentation = check(augmentation, "augmentation", _AUGMENTATION)
        self.log_base = check(log_base, "log_base", _LOG_BASE)
        self.k1 = check(k1, "k1", _K1)
        self.b = check(b, "b", _B)

    @classmethod
    def bm25(cls, k1: float = 1.2, b: float = 0.75) -> TermWeighting:
        """Return Okapi BM25 document weighting (see the module docstring)."""
        return cls(scheme="bm25", k1=k1, b=b)

    # -- configuration --------------------------------------------------------------------------

    def get_config(self) -> dict[str, Any]:
        """Return the parameters that affect the weights, as a JSON-serializable dict.

        Parameters that the chosen scheme ignores are left out (``from_config`` restores their
        defaults), so two weightings that give the same weights give the same config.
        """
        if self.scheme == "bm25":
            return {"scheme": "bm25", "k1": self.k1, "b": self.b}
        config: dict[str, Any] = {"scheme": "smart", "tf": self.tf, "idf": self.idf}
        if self.tf == "augmented":
            config["augmentation"] = self.augmentation
        if self.tf == "log":
            config["log_base"] = self.log_base
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> TermWeighting:
        """Rebuild a weighting from :meth:`get_config` output."""
        if not isinstance(config, dict):
            raise ValueError(f"config must be a dict, got {config!r}")
        unknown = sorted(set(config) - set(_DEFAULTS) - {"scheme"})
        if unknown:
            raise ValueError(f"unknown TermWeighting parameter {unknown[0]!r} in {config!r}")
        return cls(**config)

    @classmethod
    def from_spec(cls, spec: str) -> TermWeighting:
        """Parse the one weighting grammar that every layer accepts.

        ``TF-IDF`` (``log-smooth``, ``raw-natural``, ``binary-none``, ...), optionally followed by
        ``:key=value,...`` (``log-smooth:log_base=10``, ``augmented-natural:augmentation=0.4``),
        or ``bm25`` / ``bm25:k1=1.2,b=0.75``. :meth:`to_spec` writes it back.

        Raises
        ------
        ValueError
            Naming the spec and the grammar.
        """
        if not isinstance(spec, str):
            raise ValueError(f"a weighting spec must be a string ({_SPEC_HELP}), got {spec!r}")
        text = spec.strip().lower()
        name, _, options_text = text.partition(":")
        tf, dash, idf = name.partition("-")
        try:
            if name != "bm25" and (not dash or tf not in TF_SCHEMES or idf not in IDF_SCHEMES):
                raise ValueError(f"unknown scheme {name!r}")
            options = _parse_options(options_text)
            if name == "bm25":
                return cls(scheme="bm25", **_only(options, ("k1", "b")))
            return cls(tf=tf, idf=idf, **_only(options, ("log_base", "augmentation")))
        except ValueError as error:
            raise ValueError(f"bad weighting {spec!r} ({error}); use {_SPEC_HELP}") from None

    def to_spec(self) -> str:
        """The spec string of this weighting (see :meth:`from_spec`)."""
        config = self.get_config()
        if config.pop("scheme") == "bm25":
            return f"bm25:k1={_short(self.k1)},b={_short(self.b)}"
        name = f"{config.pop('tf')}-{config.pop('idf')}"
        if config.get("log_base") == math.e:
            config.pop("log_base")
        options = ",".join(f"{key}={_short(value)}" for key, value in sorted(config.items()))
        return f"{name}:{options}" if options else name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TermWeighting):
            return NotImplemented
        return self.get_config() == other.get_config()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        config = self.get_config()
        if config.pop("scheme") == "smart":
            args = ", ".join(f"{key}={value!r}" for key, value in config.items())
        else:
            args = "scheme='bm25', " + ", ".join(f"{k}={v!r}" for k, v in config.items())
        return f"TermWeighting({args})"

    # -- weights --------------------------------------------------------------------------------

    def global_weights(self, vocabulary: Vocabulary) -> np.ndarray:
        """Return the idf factor of every vocabulary term.

        Parameters
        ----------
        vocabulary : Vocabulary
            A fitted vocabulary providing N and df.

        Returns
        -------
        ndarray of float64, shape (n_terms,)
        """
        df = np.maximum(vocabulary.document_frequencies.astype(np.float64), 1.0)
        return self._idf(float(vocabulary.num_documents), df)

    def _idf(self, n: float, df: np.ndarray) -> np.ndarray:
        if self.scheme == "bm25":
            return np.log1p((n - df + 0.5) / (df + 0.5))
        if self.idf == "none":
            return np.ones_like(df)
        if self.idf == "natural":
            return np.log(n / df)
        if self.idf == "log2":
            return np.log2(n / df)
        return np.log1p(n / df)

    def unseen_weights(self, counts: Any, vocabulary: Vocabulary) -> np.ndarray:
        """Weights of words outside the vocabulary with these ``counts`` (in one text).

        Each is weighted as a term in one document of the vocabulary's N (df = 1, the rarest a
        term can be): :mod:`es_scm.similarity.unseen`.
        """
        tf = sp.csr_matrix(np.asarray(counts, dtype=np.float64).reshape(1, -1))
        df = np.ones(tf.shape[1], dtype=np.float64)
        n = float(max(vocabulary.num_documents, 1))
        return self._local_weights(tf, vocabulary) * self._idf(n, df)[tf.indices]

    def _local_weights(self, counts: sp.csr_matrix, vocabulary: Vocabulary) -> np.ndarray:
        tf = counts.data
        if self.scheme == "bm25":
            lengths = np.repeat(np.asarray(counts.sum(axis=1)).ravel(), np.diff(counts.indptr))
            avgdl = vocabulary.average_document_length or 1.0
            norm = self.k1 * (1.0 - self.b + self.b * lengths / avgdl)
            return tf * (self.k1 + 1.0) / (tf + norm)
        if self.tf == "raw":
            return tf.copy()
        if self.tf == "log":
            return 1.0 + np.log(tf) / math.log(self.log_base)
        if self.tf == "binary":
            return np.ones_like(tf)
        row_max = np.repeat(_row_max(counts), np.diff(counts.indptr))
        return self.augmentation + (1.0 - self.augmentation) * tf / row_max

    def transform(
        self, counts: Any, vocabulary: Vocabulary, global_weights: np.ndarray | None = None
    ) -> sp.csr_matrix:
        """Weight term counts, row by row.

        Parameters
        ----------
        counts : scipy sparse matrix or array-like, shape (n_documents, n_terms)
            Non-negative term counts, e.g. from :meth:`Vocabulary.to_counts`. A 1-D array is
            treated as a single row.
        vocabulary : Vocabulary
            The fitted vocabulary the counts are indexed by (for N, df and avgdl).
        global_weights : ndarray, optional
            :meth:`global_weights` of ``vocabulary``, when the caller keeps it (it costs a
            logarithm per vocabulary term).

        Returns
        -------
        scipy.sparse.csr_matrix of float64, shape (n_documents, n_terms)
            The weights, without explicit zeros.
        """
        counts = _as_counts(counts, len(vocabulary))
        if global_weights is None:
            global_weights = self.global_weights(vocabulary)
        weights = self._local_weights(counts, vocabulary) * global_weights[counts.indices]
        result = sp.csr_matrix(
            (weights, counts.indices.copy(), counts.indptr.copy()), shape=counts.shape
        )
        result.eliminate_zeros()
        return result


def _as_counts(counts: Any, n_terms: int) -> sp.csr_matrix:
    if sp.issparse(counts):
        matrix = sp.csr_matrix(counts, dtype=np.float64, copy=True)
    else:
        array = np.asarray(counts, dtype=np.float64)
        if array.ndim == 1:
            array = array[np.newaxis, :]
        if array.ndim != 2:
            raise ValueError(f"counts must be 1-D or 2-D, got shape {array.shape}")
        matrix = sp.csr_matrix(array)
    if matrix.shape[1] != n_terms:
        raise ValueError(
            f"counts have {matrix.shape[1]} columns but the vocabulary has {n_terms} terms"
        )
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    if matrix.data.size and (not np.all(np.isfinite(matrix.data)) or matrix.data.min() < 0):
        raise ValueError("counts must be finite and non-negative")
    return matrix


def _row_max(counts: sp.csr_matrix) -> np.ndarray:
    return np.asarray(counts.max(axis=1).todense(), dtype=np.float64).ravel()


def _parse_options(text: str) -> dict[str, float]:
    options: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, value = item.partition("=")
        if not equals:
            raise ValueError(f"expected key=value, got {item!r}")
        try:
            options[key.strip()] = float(value)
        except ValueError:
            raise ValueError(f"{key.strip()} must be a number, got {value.strip()!r}") from None
    return options


def _only(options: dict[str, float], allowed: tuple[str, ...]) -> dict[str, Any]:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r} (allowed: {', '.join(allowed)})")
    return options


def _short(value: float) -> str:
    return repr(int(value)) if float(value).is_integer() else repr(float(value))


def query_weighting_for(document: TermWeighting) -> TermWeighting:
    """The query weighting that goes with a document weighting when none is given.

    The document weighting itself, except for BM25 documents: BM25's length normalization is
    meant for documents, so their queries get the default weighting
    (:data:`es_scm.defaults.DEFAULT_WEIGHTING`).
    """
    return TermWeighting.from_spec(DEFAULT_WEIGHTING) if document.scheme == "bm25" else document


def as_weighting(value: WeightingLike, name: str) -> TermWeighting:
    """A weighting from a :class:`TermWeighting`, a spec string, a config dict, or None (the
    default, :data:`es_scm.defaults.DEFAULT_WEIGHTING`)."""
    if value is None:
        return TermWeighting.from_spec(DEFAULT_WEIGHTING)
    if isinstance(value, TermWeighting):
        return value
    if isinstance(value, str):
        return TermWeighting.from_spec(value)
    if isinstance(value, Mapping):
        return TermWeighting.from_config(dict(value))
    raise ValueError(
        f"{name} must be a TermWeighting, a spec string ({_SPEC_HELP}), a config dict or None, "
        f"got {value!r}"
    )


#: Which side of an SCM a text is on: documents and queries may be weighted differently (e.g.
#: BM25 documents and raw-tf queries), so every vectorizing method takes a role.
Role = Literal["query", "document"]
#: A weighting: a :class:`TermWeighting`, a spec string such as ``"log-smooth"``, a config dict,
#: or None for :data:`es_scm.defaults.DEFAULT_WEIGHTING`.
WeightingLike = TermWeighting | str | Mapping[str, Any] | None
