r"""Query words the corpus never used: a column of S for each, from the word embeddings.

S is over the corpus's terms T. A query word w outside T that the embeddings know is not dropped:
it gets a column of similarities to the terms, by the rule S's own columns follow
(:mod:`es_scm.similarity.sources`),

.. math:: s_{wt} = \omega \cdot \cos(e_w, e_t)^{\text{exponent}}
    \quad\text{for its } C \text{ most similar terms } t \text{ with }
    \cos(e_w, e_t) > \text{threshold},

ω the source's weight when sources are combined (its S is ω-weighted too), summed over the
sources that know w. This extends S to :math:`S' = \begin{pmatrix} S & E^T \\ E & I\end{pmatrix}`
over T ∪ W, with E the rows :math:`s_{wt}` and no similarity between two such words. Documents
hold no word of W, so for a query with terms x and words :math:`x_W`
(:class:`~es_scm.similarity.scm.QueryVector`,
:meth:`~es_scm.similarity.TermSimilarityMatrix.query_vector`):

.. math::

    x' = S^T x + E^T x_W, \qquad
    \lVert x\rVert_{S'}^2 = x^T S x + 2\, x_W^T E x + x_W^T x_W,

and :math:`\operatorname{SCM}(x, y) = x'^T y / (\lVert x\rVert_{S'} \lVert y\rVert_S)` as before:
the index, the exact rescoring and its proof are unchanged. A word's weight is the query
weighting's, as if it were in one document (the rarest a term can be).

:class:`UnseenTerms` keeps, per source, the unit vectors (float16) of the words it may serve —
the source's first ``limit`` words outside T, its most frequent for GloVe — and of the terms that
have a vector; a word's column is computed when a query uses it (one product with the terms'
vectors), deterministically. So "automobile" finds "car" in a corpus that only says "car".

A model saves them in ``unseen.npz``; :func:`unseen_problem` checks the arrays it declares
(every source's members, vectors of one dimension per source, at most as many terms as the
vocabulary has) before any is unpacked (:func:`es_scm.files.read_npz`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from es_scm.files import ArrayHeader, human_bytes
from es_scm.similarity.neighbors import unit_rows

__all__ = ["UnseenTerms", "UnseenWord", "unseen_problem"]

_FORMAT = "es-scm-unseen-terms/1"


@dataclass(frozen=True)
class UnseenWord:
    """A query word outside the vocabulary: its weight and its column (term ids, similarities)."""

    word: str
    weight: float
    terms: np.ndarray
    similarities: np.ndarray


class _Source:
    """One source's part: its words outside the vocabulary and the terms it knows, as vectors."""

    def __init__(
        self,
        words: list[str],
        word_vectors: np.ndarray,
        term_ids: np.ndarray,
        term_vectors: np.ndarray,
        settings: Mapping[str, float],
    ) -> None:
        self.words = words
        self.index = {word: i for i, word in enumerate(words)}
        self.word_vectors = np.asarray(word_vectors, dtype=np.float16)
        self.term_ids = np.asarray(term_ids, dtype=np.int64)
        self.term_vectors = np.asarray(term_vectors, dtype=np.float16)
        self.settings = {key: float(settings[key]) for key in _SETTINGS}
        self._terms32: np.ndarray | None = None  # float32 copy, made by the first query word

    def column(self, word: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(term ids, similarities) of ``word``, most similar first (ties by term id)."""
        row = self.index.get(word)
        if row is None or not len(self.term_ids):
            return None
        if self._terms32 is None:
            self._terms32 = self.term_vectors.astype(np.float32)
        cosines = self._terms32 @ self.word_vectors[row].astype(np.float32)
        keep = np.flatnonzero(cosines > self.settings["threshold"])
        order = np.lexsort((self.term_ids[keep], -cosines[keep]))
        limit = int(self.settings["nonzero_limit"])
        chosen = keep[order[:limit]]
        values = np.power(cosines[chosen].astype(np.float64), self.settings["exponent"])
        return self.term_ids[chosen], self.settings["weight"] * values

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        blob, offsets = _encode(self.words)
        return {
            f"{prefix}words_utf8": blob,
            f"{prefix}words_offsets": offsets,
            f"{prefix}word_vectors": self.word_vectors,
            f"{prefix}term_ids": self.term_ids,
            f"{prefix}term_vectors": self.term_vectors,
            f"{prefix}settings": np.array([self.settings[key] for key in _SETTINGS]),
        }


_SETTINGS = ("weight", "threshold", "exponent", "nonzero_limit")
_PARTS = ("words_utf8", "words_offsets", "word_vectors", "term_ids", "term_vectors", "settings")


def _encode(words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Words as one UTF-8 byte array and their offsets (compact, and loadable without pickle)."""
    encoded = [word.encode("utf-8") for word in words]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def _decode(blob: np.ndarray, offsets: np.ndarray) -> list[str]:
    data = blob.tobytes()
    return [data[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(len(offsets) - 1)]


class UnseenTerms:
    """The words outside the vocabulary that a query may use (see the module docstring).

    Made by :meth:`from_embeddings` (one source) and :meth:`combine`; a model keeps it and
    :meth:`es_scm.model.SoftCosineModel.query_vector` asks it for a query's words.
    """

    def __init__(self, sources: Sequence[_Source] = ()) -> None:
        self.sources = list(sources)

    def __len__(self) -> int:
        return len({word for source in self.sources for word in source.words})

    def __contains__(self, word: object) -> bool:
        return any(word in source.index for source in self.sources)

    def column(self, word: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The column of ``word`` (term ids ascending, similarities), summed over the sources."""
        parts = [part for source in self.sources if (part := source.column(word)) is not None]
        if not parts:
            return None
        ids = np.concatenate([ids for ids, _ in parts])
        values = np.concatenate([values for _, values in parts])
        unique, inverse = np.unique(ids, return_inverse=True)
        return unique, np.bincount(inverse, weights=values, minlength=len(unique))

    @classmethod
    def from_embeddings(
        cls,
        terms: Sequence[str],
        embeddings: Any,  # WordEmbeddings (which import this module)
        *,
        limit: int,
        threshold: float,
        exponent: float,
        nonzero_limit: int,
        weight: float = 1.0,
    ) -> UnseenTerms:
        """The first ``limit`` words of ``embeddings`` outside ``terms``, with S's rule."""
        vocabulary = set(terms)
        words = [word for word in embeddings.words[:limit] if word not in vocabulary]
        if not words:  # every word is a term already: nothing to keep
            return cls()
        rows = embeddings.indices(terms)
        known = np.flatnonzero(rows >= 0)
        settings = {
            "weight": weight,
            "threshold": threshold,
            "exponent": exponent,
            "nonzero_limit": nonzero_limit,
        }
        source = _Source(
            words,
            unit_rows(embeddings.vectors[embeddings.indices(words)]),
            known,
            unit_rows(embeddings.vectors[rows[known]]),
            settings,
        )
        return cls([source])

    @classmethod
    def combine(cls, weighted: Sequence[tuple[float, UnseenTerms]]) -> UnseenTerms:
        """The sources of several, each weight multiplied in, as S's are combined."""
        sources = []
        for weight, unseen in weighted:
            for source in unseen.sources:
                settings = {**source.settings, "weight": weight * source.settings["weight"]}
                sources.append(
                    _Source(
                        source.words,
                        source.word_vectors,
                        source.term_ids,
                        source.term_vectors,
                        settings,
                    )
                )
        return cls(sources)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array, for ``np.savez`` (no pickle)."""
        arrays = {"format": np.array(_FORMAT), "sources": np.array(len(self.sources))}
        for number, source in enumerate(self.sources):
            arrays.update(source.arrays(f"s{number}_"))
        return arrays

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> UnseenTerms:
        """The inverse of :meth:`arrays`."""
        if "format" not in arrays or str(arrays["format"]) != _FORMAT:
            raise ValueError("not saved es-scm unseen terms")
        held = len({name.split("_", 1)[0] for name in arrays} - {"format", "sources"})
        if "sources" not in arrays or int(arrays["sources"]) != held:
            raise ValueError(f"the saved unseen terms hold {held} sources, not as many as declared")
        sources = []
        for number in range(int(arrays["sources"])):
            p = f"s{number}_"
            settings = dict(zip(_SETTINGS, arrays[f"{p}settings"].tolist(), strict=True))
            sources.append(
                _Source(
                    _decode(arrays[f"{p}words_utf8"], arrays[f"{p}words_offsets"]),
                    arrays[f"{p}word_vectors"],
                    arrays[f"{p}term_ids"],
                    arrays[f"{p}term_vectors"],
                    settings,
                )
            )
        return cls(sources)


def unseen_problem(headers: Mapping[str, ArrayHeader], n_terms: int) -> str | None:
    """Why the arrays that a saved :class:`UnseenTerms` declares (member → header) cannot be
    the words outside a vocabulary of ``n_terms`` terms, or None when they fit."""
    if "format" not in headers or not headers["format"].is_text(len(_FORMAT)):
        return "not saved es-scm unseen terms"
    sources = headers.get("sources")
    if sources is None or sources.shape != () or sources.dtype.kind not in "iu":
        return "not saved es-scm unseen terms (no number of sources)"
    count = len({name.split("_", 1)[0] for name in headers} - {"format", "sources"})
    expected = {"format", "sources"} | {f"s{i}_{part}" for i in range(count) for part in _PARTS}
    if set(headers) != expected:
        odd = sorted(set(headers) ^ expected)[0]
        return f"not saved es-scm unseen terms (member {odd!r})"
    for number in range(count):
        problem = _source_problem({p: headers[f"s{number}_{p}"] for p in _PARTS}, n_terms)
        if problem is not None:
            return f"s{number}_{problem}"
    return None


def _source_problem(parts: Mapping[str, ArrayHeader], n_terms: int) -> str | None:
    """Why one source's arrays do not fit (the message starts with the part's name), or None."""
    offsets, word_vectors = parts["words_offsets"], parts["word_vectors"]
    term_ids, term_vectors = parts["term_ids"], parts["term_vectors"]
    if not offsets.is_vector("iu") or offsets.size < 1:
        return f"words_offsets declares {_describe(offsets)}, not the offsets of words"
    words = offsets.size - 1
    if not term_ids.is_vector("iu") or term_ids.size > n_terms:
        return f"term_ids declares {_describe(term_ids)}: more ids than the {n_terms} terms"
    dim = word_vectors.shape[1] if len(word_vectors.shape) == 2 else -1
    expected = {
        "words_utf8": parts["words_utf8"].is_vector("u")
        and parts["words_utf8"].dtype.itemsize == 1,
        "word_vectors": word_vectors.dtype.kind == "f" and word_vectors.shape == (words, dim),
        "term_vectors": term_vectors.dtype.kind == "f"
        and term_vectors.shape == (term_ids.size, dim),
        "settings": parts["settings"].is_vector("f", len(_SETTINGS)),
    }
    for name, fits in expected.items():
        if not fits:
            return (
                f"{name} declares {_describe(parts[name])}, which does not fit {words} words "
                f"and {term_ids.size} terms"
            )
    return None


def _describe(header: ArrayHeader) -> str:
    return f"{header.shape} {header.dtype} ({human_bytes(header.nbytes)})"
