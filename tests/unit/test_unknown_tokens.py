"""Unknown terms are counted: at build time (the share pruning dropped), in a query or text, and
models saved before the count still load (at ingestion, with a drift warning:
tests/integration/test_unknown_tokens_es.py)."""

from __future__ import annotations

import json

import pytest

from es_scm import SoftCosineModel
from es_scm.model import TokenCounts, Vocabulary

# "wing" and "flow" are in every document, "rare" in one: min_df=2 drops it.
BUILD_CORPUS = [f"the wing and the flow {'rare' if i == 0 else 'wing'}" for i in range(10)]


def test_the_vocabulary_records_the_share_pruning_dropped():
    vocabulary = Vocabulary(min_df=2).fit(text.split() for text in BUILD_CORPUS)
    # no tokenizer here, so every word is a token, stop word or not
    assert vocabulary.corpus_tokens == sum(len(text.split()) for text in BUILD_CORPUS)
    assert vocabulary.num_tokens == vocabulary.corpus_tokens - 1  # "rare", once
    assert vocabulary.pruned_share == pytest.approx(1 / vocabulary.corpus_tokens)
    assert Vocabulary.from_dict(vocabulary.to_dict()) == vocabulary
    assert Vocabulary().fit([["a", "b"]]).pruned_share == 0.0


def test_stop_words_are_not_tokens_of_the_pruned_share():
    model = SoftCosineModel.build(BUILD_CORPUS, min_df=2)
    # "the" and "and" are stop words: 3 terms per document ("wing", "flow", "wing"/"rare")
    assert model.vocabulary.corpus_tokens == 30
    assert model.vocabulary.pruned_share == pytest.approx(1 / 30)


def test_an_old_vocabulary_without_the_share_still_loads(tmp_path, cli):
    model = SoftCosineModel.build(BUILD_CORPUS, min_df=2)
    directory = model.save(tmp_path / "model")
    state = json.loads((directory / "vocabulary.json").read_text(encoding="utf-8"))
    assert state["corpus_tokens"] == 30
    del state["corpus_tokens"]  # as written by es-scm before it recorded it
    (directory / "vocabulary.json").write_text(json.dumps(state), encoding="utf-8")
    old = SoftCosineModel.load(directory)
    assert old.model_id == model.model_id  # the share is not part of the model's identity
    assert old.vocabulary.pruned_share is None
    assert TokenCounts(5000, 4000).drift(old.vocabulary) is None  # nothing to compare with
    code, out, _ = cli("model", "info", directory)
    assert code == 0
    assert "pruned tokens" in out
    assert "not recorded" in out


def test_model_info_prints_the_pruned_share(tmp_path, cli):
    directory = SoftCosineModel.build(BUILD_CORPUS, min_df=2).save(tmp_path / "model")
    code, out, _ = cli("model", "info", directory)
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("pruned tokens"))
    assert "3.3% of the corpus's 30 tokens (1:" in line


def test_counting_tokens_on_known_and_unknown_words():
    model = SoftCosineModel.build(BUILD_CORPUS, min_df=2)
    tokens = TokenCounts()
    # terms: wing flow | wing zebra quokka (2 unknown) | rare (pruned: unknown); stop words skipped
    model.vectorize_many(["the wing and the flow", "wing zebra quokka", "rare"], tokens=tokens)
    assert (tokens.tokens, tokens.unknown) == (6, 3)
    assert tokens.unknown_share == 0.5
    assert TokenCounts().unknown_share is None


@pytest.mark.parametrize(
    ("tokens", "unknown", "warns"),
    [
        (999, 999, False),  # too few tokens to say
        (1000, 130, False),  # 13% < 3.3% + 10 points
        (1000, 140, True),
        (1000, 1000, True),
    ],
)
def test_drift_is_far_above_the_pruned_share(tokens, unknown, warns):
    vocabulary = SoftCosineModel.build(BUILD_CORPUS, min_df=2).vocabulary  # 3.3% pruned
    warning = TokenCounts(tokens, unknown).drift(vocabulary)
    assert (warning is not None) == warns
    if warns:
        assert "drifted" in warning
        assert "rebuilding" in warning
