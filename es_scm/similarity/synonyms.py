r"""Curated synonym files as a source of S, so that a team's existing synonym list counts.

Two formats (chosen by the file's suffix: ``.tsv`` is a weighted TSV, anything else Solr's):

Solr/Elasticsearch synonyms (the ``synonym`` filter's default format), one rule a line
    ``car, automobile, auto`` — equivalent terms: every two of them are similar.
    ``tv, telly => television`` — an explicit mapping: each term on the left is similar to each
    term on the right (not the left terms to each other).
    A line starting with ``#`` is a comment, a blank line is skipped, and ``\,``, ``\=>`` and
    ``\\`` stand for a literal comma, arrow and backslash, as in Lucene's parser. Related terms
    get ``similarity`` (1 by default).
Weighted TSV, one pair a line
    ``term<TAB>term<TAB>similarity`` with a similarity in [−1, 1]; comments and blank lines as
    above.

Each entry is tokenized with the model's tokenizer (lower-cased, stop words dropped), then:

* one term: the entry is that term;
* no term (a stop word, punctuation): dropped, counted;
* several terms — a phrase such as ``united states``: skipped, counted, and one warning per file
  names the count and an example. S relates single terms: relating each word of a phrase to the
  other side would make ``united`` a synonym of ``usa``, so es-scm does not guess.

A pair whose two terms are the model's terms enters S with ``similarity ** exponent`` if its
similarity is above ``threshold`` (:class:`~es_scm.options.SynonymOptions`, defaults
:data:`es_scm.defaults.SYNONYM_DEFAULTS`), in both directions when S is symmetric (the model's
``symmetric``: an explicit mapping then counts both ways, as Elasticsearch's does when its
filter runs at index and at query time); a later pair overwrites an earlier one (the thesaurus
builder, :func:`es_scm.similarity.thesaurus.pairs_matrix`). A pair with a term outside the
vocabulary is counted and reported (``model.json``, ``es-scm model build``). The matrix is mixed
into S with ``weight`` (:func:`es_scm.similarity.factory.build_similarity`).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import sparse

from es_scm.defaults import SYNONYM_DEFAULTS
from es_scm.files import open_text
from es_scm.options import SynonymOptions, check_fields
from es_scm.similarity.thesaurus import pairs_matrix

__all__ = ["SynonymFile", "Synonyms", "as_synonyms", "read_synonyms", "synonym_matrix"]

logger = logging.getLogger(__name__)

#: A tokenizer: text → terms (the model's).
Tokenize = Callable[[str], list[str]]
_TSV_SUFFIXES = (".tsv", ".tab")


@dataclass(frozen=True)
class Synonyms:
    """Synonym files and how they enter S (the fields of :class:`~es_scm.options.SynonymOptions`,
    checked alike, with the defaults :data:`es_scm.defaults.SYNONYM_DEFAULTS`).

    Parameters
    ----------
    files : path or sequence of paths
        Solr-format files, or weighted TSV files (``.tsv``); read in order.
    weight, similarity, threshold, exponent
        See :class:`~es_scm.options.SynonymOptions`.
    """

    files: Any = ()  # a path or paths, kept as a tuple of Paths
    weight: float = SYNONYM_DEFAULTS.weight
    similarity: float = SYNONYM_DEFAULTS.similarity
    threshold: float = SYNONYM_DEFAULTS.threshold
    exponent: float = SYNONYM_DEFAULTS.exponent

    def __post_init__(self) -> None:
        files = self.files
        if isinstance(files, str | os.PathLike):
            files = (files,)
        files = tuple(Path(f) for f in files)
        if not files:
            raise ValueError("synonyms need at least one file")
        for path in files:
            if not path.is_file():
                raise ValueError(f"synonym file not found: {path}")
        object.__setattr__(self, "files", files)
        check_fields(self, SynonymOptions.CONSTRAINTS)
        if self.threshold < 0 and not float(self.exponent).is_integer():
            raise ValueError(
                f"a negative threshold ({self.threshold}) needs an integer exponent, "
                f"got {self.exponent}"
            )

    @property
    def options(self) -> SynonymOptions:
        """The options as their typed value."""
        return SynonymOptions(self.weight, self.similarity, self.threshold, self.exponent)

    def describe(self) -> dict[str, Any]:
        """The files and options as JSON values (a report's form)."""
        return {"files": [os.fspath(f) for f in self.files], **self.options.as_dict()}


def as_synonyms(value: Any) -> Synonyms | None:
    """``synonyms=`` of :meth:`SoftCosineModel.build`: None, a path, paths, or :class:`Synonyms`."""
    if value is None or isinstance(value, Synonyms):
        return value
    if isinstance(value, str | os.PathLike) or (
        isinstance(value, list | tuple) and all(isinstance(v, str | os.PathLike) for v in value)
    ):
        return Synonyms(value)
    raise ValueError(
        f"synonyms must be a path, a list of paths or Synonyms, got {type(value).__name__}"
    )


@dataclass
class SynonymFile:
    """One file's pairs of terms, and what was left out, for the build record.

    Attributes
    ----------
    pairs : list of (str, str, float)
        The related terms, each entry a single term of the model's tokenizer.
    rules : int
        The lines that were rules (or pairs).
    multi_word : int
        Entries that were phrases (several terms), skipped.
    dropped : int
        Entries with no term left (stop words), dropped.
    """

    path: Path
    format: str
    pairs: list[tuple[str, str, float]] = field(default_factory=list)
    rules: int = 0
    multi_word: int = 0
    dropped: int = 0
    _phrase: str | None = None

    def record(self) -> dict[str, Any]:
        """The file as ``model.json`` records it (its path, content hash and counts)."""
        digest = hashlib.sha256(self.path.read_bytes()).hexdigest()
        return {
            "path": os.fspath(self.path),
            "sha256": digest,
            "format": self.format,
            "rules": self.rules,
            "pairs": len(self.pairs),
            "multi_word_entries": self.multi_word,
            "dropped_entries": self.dropped,
        }

    def term(self, entry: str, tokenize: Tokenize, line: int) -> str | None:
        """The single term of ``entry``, or None (counted) for a phrase or no term."""
        terms = tokenize(entry)
        if len(terms) == 1:
            return terms[0]
        if terms:
            self.multi_word += 1
            if self._phrase is None:
                self._phrase = f"{entry!r} (line {line})"
        else:
            self.dropped += 1
        return None

    def warn(self) -> None:
        if self.multi_word:
            logger.warning(
                "%s: %d multi-word entries skipped (S relates single terms), e.g. %s",
                self.path,
                self.multi_word,
                self._phrase,
            )


def read_synonyms(path: str | Path, tokenize: Tokenize, similarity: float = 1.0) -> SynonymFile:
    """The pairs of terms of one synonym file (the format by its suffix; module docstring).

    Parameters
    ----------
    path : path
    tokenize : callable
        The model's tokenizer.
    similarity : float
        The similarity of two terms a Solr-format rule relates.

    Raises
    ------
    ValueError
        ``"FILE:LINE: what is wrong"`` for a malformed line.
    """
    path = Path(path)
    tsv = path.suffix.lower() in _TSV_SUFFIXES
    read = SynonymFile(path, "tsv" if tsv else "solr")
    for number, line in _rule_lines(path):
        where = f"{path}:{number}"
        read.rules += 1
        if tsv:
            read.pairs += _tsv_pair(line, where, read, tokenize, number)
        else:
            read.pairs += _solr_pairs(line, where, read, tokenize, number, similarity)
    read.warn()
    return read


def _rule_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of every line that is neither blank nor a comment."""
    with open_text(path, "a synonym file", encoding="utf-8-sig") as lines:
        for number, line in enumerate(lines, start=1):
            line = line.rstrip("\r\n")
            if line.strip() and not line.lstrip().startswith("#"):
                yield number, line


def _solr_pairs(
    line: str, where: str, read: SynonymFile, tokenize: Tokenize, number: int, similarity: float
) -> list[tuple[str, str, float]]:
    sides = _split(line, "=>")
    if len(sides) > 2:
        raise ValueError(f"{where}: more than one '=>' in a rule")
    if "\t" in line:
        raise ValueError(f"{where}: a tab in a Solr-format rule (a weighted TSV? name it .tsv)")
    terms = []
    for side in sides:
        found = (read.term(entry, tokenize, number) for entry in _entries(side, where))
        terms.append([term for term in found if term is not None])
    if len(terms) == 1:  # equivalent terms: every two of them
        group = list(dict.fromkeys(terms[0]))
        return [(a, b, similarity) for i, a in enumerate(group) for b in group[i + 1 :]]
    left, right = terms
    return [(a, b, similarity) for a in left for b in right if a != b]


def _entries(side: str, where: str) -> list[str]:
    entries = [_unescape(entry).strip() for entry in _split(side, ",")]
    if any(not entry for entry in entries):
        raise ValueError(f"{where}: an empty entry (two commas, or a comma or '=>' at an end)")
    return entries


def _split(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` where it is not escaped by a backslash (escapes kept)."""
    parts, current, at = [], [], 0
    while at < len(text):
        if text[at] == "\\" and at + 1 < len(text):
            current.append(text[at : at + 2])
            at += 2
        elif text.startswith(separator, at):
            parts.append("".join(current))
            current, at = [], at + len(separator)
        else:
            current.append(text[at])
            at += 1
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    out, at = [], 0
    while at < len(text):
        if text[at] == "\\" and at + 1 < len(text):
            at += 1
        out.append(text[at])
        at += 1
    return "".join(out)


def _tsv_pair(
    line: str, where: str, read: SynonymFile, tokenize: Tokenize, number: int
) -> list[tuple[str, str, float]]:
    fields = line.split("\t")
    if len(fields) != 3:
        raise ValueError(
            f"{where}: expected term<TAB>term<TAB>similarity, got {len(fields)} fields"
        )
    try:
        similarity = float(fields[2])
    except ValueError:
        raise ValueError(
            f"{where}: the similarity {fields[2].strip()!r} is not a number "
            "(a header line? start it with #)"
        ) from None
    if not math.isfinite(similarity) or not -1.0 <= similarity <= 1.0:
        raise ValueError(f"{where}: the similarity {similarity} is not in [-1, 1]")
    a, b = (read.term(entry.strip(), tokenize, number) for entry in fields[:2])
    return [] if a is None or b is None or a == b else [(a, b, similarity)]


def synonym_matrix(
    terms: Sequence[str],
    synonyms: Synonyms,
    tokenize: Tokenize,
    *,
    symmetric: bool,
    dtype: np.dtype,
) -> tuple[sparse.csc_matrix, dict[str, Any]]:
    """S over ``terms`` from synonym files, and the record of how it was built.

    Raises
    ------
    ValueError
        For a malformed line of a file (``"FILE:LINE: …"``).
    """
    known = set(terms)
    files, kept, outside = [], [], 0
    for path in synonyms.files:
        read = read_synonyms(path, tokenize, synonyms.similarity)
        inside = [p for p in read.pairs if p[0] in known and p[1] in known]
        outside += len(read.pairs) - len(inside)
        kept += inside
        files.append({**read.record(), "pairs_in_vocabulary": len(inside)})
    counted = [(a, b, s**synonyms.exponent) for a, b, s in kept if s > synonyms.threshold]
    matrix, _ = pairs_matrix(terms, counted, symmetric=symmetric, ignore_missing=False, dtype=dtype)
    if outside:
        logger.info("synonyms: %d pairs have a term outside the vocabulary (not in S)", outside)
    info = {
        "source": "synonyms",
        "files": files,
        "pairs": len(counted),
        "pairs_outside_vocabulary": outside,
        "similarity": synonyms.similarity,
        "threshold": synonyms.threshold,
        "exponent": synonyms.exponent,
        "symmetric": symmetric,
    }
    return matrix, info
