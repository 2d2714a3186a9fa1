"""Multi-turn retrieval over the bundled samples: follow-ups searched alone, with their
history (the contextual variant, no model), and with the test model server as the rewriter
that writes standalone questions (scripted with the set's own standalone questions: an oracle,
the ceiling of the history-aware path rather than a measure of any model) (issue 35).

Builds KB "samples" from samples/ into DATA_DIR on first use (OCR included), then scores
tests/evaluation/data/conversations.jsonl: recall@k per document, per turn group, with
paired-bootstrap intervals against the plain search.

Usage: python benchmarks/multi_turn.py [--data-dir /tmp/multi-turn] [--k 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from ragsift import bootstrap
from ragsift.config import Settings
from ragsift.evaluation.conversations import (
    load_conversations,
    score_all,
    summarize,
    to_markdown,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from support.fixtures import run_llm_server  # noqa: E402  (the test model server)


def _kb(container: bootstrap.Container) -> str:
    kb = container.repository.get_kb_by_name("samples")
    if kb is not None:
        return kb.id
    kb = container.ingestion.ensure_kb("samples")
    for path in sorted((ROOT / "samples").iterdir()):
        outcome = container.ingestion.ingest_path(kb, path)
        print(f"ingested {path.name}: {outcome.document.status}", file=sys.stderr)
    return kb.id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/multi-turn"))
    parser.add_argument("--conversations", type=Path,
                        default=ROOT / "tests/evaluation/data/conversations.jsonl")
    parser.add_argument("--k", type=int, default=3)
    args = parser.parse_args()
    conversations = load_conversations(args.conversations)
    with run_llm_server(args.data_dir.parent / "multi-turn-llm.log") as server:
        answers = {turn.query: turn.standalone
                   for conversation in conversations for turn in conversation.turns}
        server.control(chat={"answers": answers})
        container = bootstrap.build(Settings(
            data_dir=args.data_dir, llm_base_url=f"{server.url}/v1", rewrite=False,
            query_cache_size=0,
        ))
        try:
            kb_id = _kb(container)
            runs = {}
            for config in ("plain", "history", "history-rewrite"):
                started, cpu = time.perf_counter(), time.process_time()
                runs[config] = score_all(container.retrieval.search, kb_id, conversations,
                                         config, args.k)
                turns = len(runs[config])
                print(f"{config}: {turns} turns, "
                      f"{(time.perf_counter() - started) / turns * 1000:.1f} ms wall, "
                      f"{(time.process_time() - cpu) / turns * 1000:.1f} ms CPU per turn",
                      file=sys.stderr)
        finally:
            container.close()
    print(f"{len(conversations)} conversations; load average "
          f"{os.getloadavg()[0]:.1f}; recall@{args.k} per document\n")
    print(to_markdown(summarize(runs), args.k))


if __name__ == "__main__":
    main()
