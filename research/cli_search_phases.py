"""Where a one-shot CLI search's CPU goes (issue 39 item 1): the libraries it must import, the
search container, and the first and a second search, in one process.

Each phase's CPU seconds (user + system of this process, all threads) in the order a
`ragsift search` meets them; the libraries are imported one by one first, so each line is that
library's own cost (numpy's BLAS start, pydantic's core, rjieba's dictionary, ...), and
ragsift's modules after them cost only their own code. `search 1` includes the ONNX session
and the first embedding; `search 2` is a warm search for comparison.

Usage: RAGSIFT_DATA_DIR=DIR python research/cli_search_phases.py KB QUERY [--runs 3]
"""

from __future__ import annotations

import argparse
import itertools
import resource
import statistics
import subprocess
import sys


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def phases(kb: str, query: str) -> None:
    """One run, in this process: print `phase seconds` lines."""
    marks: list[tuple[str, float]] = [("start", cpu())]
    import typer  # noqa: F401
    marks.append(("typer", cpu()))
    import numpy  # noqa: F401
    marks.append(("numpy", cpu()))
    import pydantic_settings  # noqa: F401
    marks.append(("pydantic + pydantic-settings", cpu()))
    import rjieba  # noqa: F401
    marks.append(("rjieba (its dictionary)", cpu()))
    import onnxruntime  # noqa: F401
    marks.append(("onnxruntime", cpu()))
    import tantivy  # noqa: F401
    marks.append(("tantivy", cpu()))
    import ragsift.config
    marks.append(("ragsift.config (Settings)", cpu()))
    import ragsift.bootstrap.search  # noqa: F401
    marks.append(("ragsift's search modules", cpu()))
    import asyncio

    from ragsift.cli.common import kb_named_in, open_search_container
    from ragsift.domain.requests import SearchRequest

    with open_search_container(None) as container:
        marks.append(("search container", cpu()))
        request = SearchRequest.model_validate(
            {"query": query, "kb_id": kb_named_in(container.repository, kb).id})
        asyncio.run(container.retrieval.search(request))
        marks.append(("search 1 (ONNX session, embedding, BM25, dense)", cpu()))
        asyncio.run(container.retrieval.search(request))
        marks.append(("search 2 (warm)", cpu()))
    for (_, before), (name, after) in itertools.pairwise(marks):
        print(f"{name}\t{after - before:.4f}")
    print(f"total\t{marks[-1][1] - marks[0][1]:.4f}")
    print(f"maxrss_mb\t{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kb")
    parser.add_argument("query")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        phases(args.kb, args.query)
        return
    runs: dict[str, list[float]] = {}
    for _ in range(args.runs):  # each in a fresh process, as a CLI search is
        out = subprocess.run([sys.executable, __file__, args.kb, args.query, "--one"],
                             check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            name, value = line.split("\t")
            runs.setdefault(name, []).append(float(value))
    print("| phase | CPU-s (maxrss_mb: MB), median of runs |\n|---|---:|")
    for name, values in runs.items():
        print(f"| {name} | {statistics.median(values):.3f} |")


if __name__ == "__main__":
    main()
