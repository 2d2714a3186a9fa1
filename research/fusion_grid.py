"""Grid of fusion settings over the evaluation KBs built by `ragsift eval` (one data dir).

Usage: python research/fusion_grid.py --data-dir /tmp/eval-data SET_DIR [SET_DIR ...]
Prints nDCG@10 per set for every configuration and the configurations that do best on all
sets at once (ranked by their worst gain over dense alone), then a 5-fold cross-validation of
picking the best configuration per set.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.evaluation.datasets import load_beir_folder
from ragsift.evaluation.fusion_tuning import (
    FusionConfig,
    collect_lists,
    cross_validate,
    grid,
    score,
)
from ragsift.evaluation.session import kb_name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()
    container = build(Settings(data_dir=args.data_dir))
    configs = grid()
    table: dict[str, dict[str, float]] = {}
    for folder in args.sets:
        dataset = load_beir_folder(folder)
        kb = container.repository.get_kb_by_name(kb_name(folder.name, False))
        if kb is None:
            print(f"{folder.name}: no KB in {args.data_dir}; run `ragsift eval {folder}` first")
            continue
        corpus_of = {d.id: d.filename for d in container.repository.list_documents(kb.id)}
        queries = [q for q in dataset.queries if dataset.qrels.get(q.id)]
        lists = collect_lists(container.index, container.embedder, kb.id, queries, args.depth)
        scores = {c.label: score(lists, dataset.qrels, corpus_of, c)["ndcg@10"] for c in configs}
        table[folder.name] = scores
        best = sorted(scores.items(), key=lambda kv: -kv[1])[:5]
        print(f"\n{folder.name}: dense {scores['dense']:.4f} sparse {scores['sparse']:.4f}")
        for label, value in best:
            print(f"  {value:.4f}  {label}")
        cv = cross_validate(lists, dataset.qrels, corpus_of, configs, FusionConfig("dense"))
        print(f"  5-fold CV gain over dense: {cv.gain:+.4f} ± {cv.gain_spread:.4f}")
    if len(table) > 1:
        print("\nbest on every set at once (worst gain over dense, then mean nDCG@10):")
        ranked = sorted(
            (c.label for c in configs),
            key=lambda label: (
                -min(table[s][label] - table[s]["dense"] for s in table),
                -statistics.fmean(table[s][label] for s in table),
            ),
        )
        for label in ranked[:10]:
            cells = "  ".join(f"{s}={table[s][label]:.4f}" for s in table)
            worst = min(table[s][label] - table[s]["dense"] for s in table)
            print(f"  {label:<45} worst gain {worst:+.4f}  {cells}")
    container.close()


if __name__ == "__main__":
    main()
