"""Train gensim word2vec on a corpus you point at, once: the vectors are cached by content key.

Corpora (:func:`iter_corpus_texts`)
    * a WikiExtractor tar archive (``.tar.xz``, ``.tar.gz``, ``.tar.bz2``, ``.tar``), streamed
      member by member: the text of every ``<doc …>…</doc>`` block, one paragraph per text (the
      title lines and paragraphs under ``min_words`` words skipped);
    * SemEval Task 3 XML (``.xml``): every question subject, body and comment text;
    * a directory: every file under it, recursively, one text per non-empty line;
    * any other file: one text per non-empty line.

Training (:func:`train_word2vec`)
    The texts are tokenized with the model's :class:`~es_scm.model.Tokenizer` (stop words removed,
    as in the gensim SCM notebook) and written once to a sentence file in the cache directory,
    keyed by the corpus path, size and modification time and the tokenizer (so a large corpus is
    read once). Training is the one trainer of the model,
    :func:`es_scm.similarity.training.train_on_file`: one worker, a fixed seed, the vectors
    cached by the sentences' content hash and the parameters. The cache directory is
    ``cache_dir``, else ``$ES_SCM_CACHE/word2vec``, else ``~/.cache/es-scm/word2vec``; like the
    trainer's, it is private to the user (0700, files 0600: they hold the corpus's words).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from es_scm.evaluation.collections import read_wikipedia_paragraphs
from es_scm.files import open_text
from es_scm.model.text import Tokenizer
from es_scm.similarity import WordEmbeddings
from es_scm.similarity.training import EmbeddingTraining, train_on_file
from es_scm.similarity.training_files import partial_name, private_directory, private_file

__all__ = ["default_cache_dir", "iter_corpus_texts", "train_word2vec"]

logger = logging.getLogger(__name__)

_SEMEVAL_TEXT_TAGS = ("OrgQSubject", "OrgQBody", "RelQSubject", "RelQBody", "RelCText")


def default_cache_dir() -> Path:
    """``$ES_SCM_CACHE/word2vec``, else ``~/.cache/es-scm/word2vec``."""
    root = os.environ.get("ES_SCM_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "es-scm"
    return base / "word2vec"


def iter_corpus_texts(path: str | Path, *, min_words: int = 5) -> Iterator[str]:
    """Yield the texts of a corpus (see the module docstring for the formats).

    Parameters
    ----------
    path : path
        A tar archive of WikiExtractor output, a SemEval XML file, a directory or a text file.
    min_words : int, default=5
        Wikipedia paragraphs with fewer whitespace-separated words are skipped.
    """
    path = Path(path)
    name = path.name.lower()
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            yield from _lines(file)
    elif name.endswith((".tar", ".tar.xz", ".txz", ".tar.gz", ".tgz", ".tar.bz2")):
        yield from _wikiextractor_tar(path, min_words)
    elif name.endswith(".xml"):
        yield from _semeval_xml(path)
    elif path.is_file():
        yield from _lines(path)
    else:
        raise FileNotFoundError(f"word2vec corpus not found: {path}")


def _lines(path: Path) -> Iterator[str]:
    with open_text(path, "a word2vec training corpus", errors="replace") as lines:
        for line in lines:
            if line.strip():
                yield line


def _wikiextractor_tar(path: Path, min_words: int) -> Iterator[str]:
    for paragraph in read_wikipedia_paragraphs(path, min_words=min_words):
        yield paragraph["text"]


def _semeval_xml(path: Path) -> Iterator[str]:
    for _, element in ElementTree.iterparse(path, events=("end",)):
        if element.tag in _SEMEVAL_TEXT_TAGS and element.text and element.text.strip():
            yield element.text
        if element.tag == "OrgQuestion":
            element.clear()


def _cache_key(corpus: Path, tokenizer: Tokenizer, params: dict[str, Any]) -> str:
    stat = corpus.stat()
    description = {
        "corpus": str(corpus.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "tokenizer": tokenizer.get_config(),
        "params": params,
        "scheme": "es-scm-word2vec/1",
    }
    text = json.dumps(description, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def train_word2vec(
    corpus: str | Path,
    *,
    cache_dir: str | Path | None = None,
    tokenizer: Tokenizer | None = None,
    vector_size: int = 100,
    window: int = 5,
    min_count: int = 5,
    epochs: int = 5,
    sg: int = 0,
    seed: int = 12345,
    max_texts: int | None = None,
) -> WordEmbeddings:
    """Word embeddings trained by gensim ``Word2Vec`` on ``corpus``, cached after the first run.

    Parameters
    ----------
    corpus : path
        See :func:`iter_corpus_texts`.
    cache_dir : path, optional
        Where the tokenized corpus and the vectors are kept (see :func:`default_cache_dir`).
    tokenizer : Tokenizer, optional
        Defaults to ``Tokenizer()`` (the model's default: lower case, English stop words out).
    vector_size, window, min_count, epochs, sg, seed
        gensim ``Word2Vec`` parameters (CBOW by default, as in the notebook).
    max_texts : int, optional
        Use only the first ``max_texts`` texts of the corpus (e.g. to bound the Wikipedia run).

    Returns
    -------
    WordEmbeddings
    """
    corpus = Path(corpus)
    if not corpus.exists():
        raise FileNotFoundError(f"word2vec corpus not found: {corpus}")
    tokenizer = Tokenizer() if tokenizer is None else tokenizer
    training = EmbeddingTraining(
        method="word2vec",
        vector_size=vector_size,
        window=window,
        min_count=min_count,
        epochs=epochs,
        sg=sg,
        seed=seed,
        cache_dir=cache_dir,
    )
    directory = private_directory(cache_dir if cache_dir is not None else default_cache_dir())
    corpus_key = _cache_key(corpus, tokenizer, {"max_texts": max_texts})
    sentences_path = directory / f"corpus-{corpus_key}.txt"
    if not sentences_path.exists():
        _tokenize_to(corpus, tokenizer, max_texts, sentences_path)
    return train_on_file(sentences_path, training, name=str(corpus))


def _tokenize_to(
    corpus: Path, tokenizer: Tokenizer, max_texts: int | None, sentences_path: Path
) -> None:
    """Write the corpus's tokenized texts, one a line (kept: the corpus is read once)."""
    started = time.perf_counter()
    partial = partial_name(sentences_path)
    count = 0
    with io.TextIOWrapper(private_file(partial), encoding="utf-8") as out:
        for text in iter_corpus_texts(corpus):
            if max_texts is not None and count >= max_texts:
                break
            tokens = tokenizer.tokenize(text)
            if tokens:
                out.write(" ".join(tokens) + "\n")
                count += 1
    partial.replace(sentences_path)
    seconds = time.perf_counter() - started
    logger.info("word2vec: tokenized %d texts in %.0fs to %s", count, seconds, sentences_path)
