"""Plot MAP per method per collection from the JSON of ``es-scm eval semeval`` and ``eval trec``.

Usage::

    .venv/bin/python scripts/plot_eval.py --semeval results/semeval-2016-dev.json \
        --trec results/trec.json --out docs/eval_map.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

SEMEVAL_METHODS = {
    "ir-baseline": "IR baseline",
    "tfidf": "TF-IDF cosine",
    "es-bm25": "BM25 (ES)",
    "es-scm": "SCM (ES)",
    "bm25+scm": "BM25 + SCM",
}
TREC_METHODS = {"bm25": "BM25 (ES)", "scm": "SCM (ES)", "bm25+scm": "BM25 + SCM"}
COLORS = {
    "IR baseline": "#999999",
    "TF-IDF cosine": "#8da0cb",
    "BM25 (ES)": "#66c2a5",
    "SCM (ES)": "#fc8d62",
    "BM25 + SCM": "#e78ac3",
}


def main() -> None:
    """Read the result files and draw one group of bars per collection."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--semeval", help="JSON of es-scm eval semeval")
    parser.add_argument("--trec", help="JSON of es-scm eval trec")
    parser.add_argument("--out", required=True, help="PNG file")
    args = parser.parse_args()

    groups: list[tuple[str, dict[str, float]]] = []
    if args.semeval:
        methods = json.loads(Path(args.semeval).read_text())["methods"]
        groups.append(
            (
                "SemEval-2016 dev",
                {label: methods[m]["MAP"] for m, label in SEMEVAL_METHODS.items() if m in methods},
            )
        )
    if args.trec:
        for report in json.loads(Path(args.trec).read_text())["collections"]:
            methods = report["methods"]
            groups.append(
                (
                    report["collection"].upper()
                    if report["collection"] != "cranfield"
                    else "Cranfield",
                    {label: 100 * methods[m]["AP"] for m, label in TREC_METHODS.items()},
                )
            )
    labels = list(COLORS)
    width = 0.8 / len(labels)
    figure, axes = plt.subplots(figsize=(9, 4.5))
    for g, (_, values) in enumerate(groups):
        present = [label for label in labels if label in values]
        offset = g - width * (len(present) - 1) / 2
        for i, label in enumerate(present):
            x = offset + i * width
            axes.bar(
                x,
                values[label],
                width,
                color=COLORS[label],
                label=label if label not in axes.get_legend_handles_labels()[1] else None,
            )
            axes.text(x, values[label] + 0.5, f"{values[label]:.1f}", ha="center", fontsize=7)
    axes.set_xticks(range(len(groups)), [name for name, _ in groups])
    axes.set_ylabel("MAP (%)")
    axes.set_title("MAP per method (SemEval: official MAP of 10 candidates; others: AP@100)")
    axes.legend(fontsize=8, ncols=3, loc="upper right")
    axes.set_ylim(0, 100)
    figure.tight_layout()
    figure.savefig(args.out, dpi=120)


if __name__ == "__main__":
    main()
