"""Whether the mixed-KB rule (RAGSIFT_CROSS_LINGUAL_MIXED_SHARE) fires on the labelled sets.

For each set under EVALDATA (corpus.jsonl, queries.dev.jsonl): the language of every document
(cjk_share of its title and text, the first `--chars` characters, as KbScripts reads a
document), the share of documents in the other language than each query's, over the whole
corpus and over the sample KbScripts takes (`--documents` spread evenly in ingest order), and
how many queries the mixed rule would give the second dense channel (a share >= `--share`;
a query in the KB's minority script already searched it before, by the minority-script rule).

    python research/mixed_kb_trigger.py [--evaldata ../shared/evaldata] [SET ...]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from ragsift.retrieval.cross_lingual import (
    cjk_share,
    language_of,
    mixed_language,
    translation_target,
)

SETS = ("afqmc-faq", "cmrc2018", "kuake-qtr", "scifact")


def _languages(path: Path, chars: int) -> tuple[list[str | None], list[str]]:
    """Each document's language and its first `chars` characters."""
    found: list[str | None] = []
    texts: list[str] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            text = (row.get("title", "") + "\n" + row["text"])[:chars]
            share = cjk_share(text)
            found.append(None if share is None else language_of(share))
            texts.append(text)
    return found, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sets", nargs="*", default=list(SETS))
    parser.add_argument("--evaldata", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared" / "evaldata")
    parser.add_argument("--documents", type=int, default=20)
    parser.add_argument("--chars", type=int, default=2000)
    parser.add_argument("--share", type=float, default=0.1)
    args = parser.parse_args()
    print("| set | documents zh / en / neither | sampled zh / en | queries zh / en "
          "| queries the rule sends to the second channel |")
    print("|---|---|---|---|---|")
    for name in args.sets:
        documents, texts = _languages(args.evaldata / name / "corpus.jsonl", args.chars)
        count = min(args.documents, len(documents))
        picked = [i * len(documents) // count for i in range(count)]
        sample = [documents[i] for i in picked]
        kb_share = cjk_share("\n".join(texts[i] for i in picked))
        known = [language for language in sample if language is not None]
        zh_documents = sum(language == "zh" for language in known) / len(known)
        queries = args.evaldata / name / "queries.dev.jsonl"
        fired = 0
        query_languages: Counter[str | None] = Counter()
        with queries.open(encoding="utf-8") as lines:
            for line in lines:
                share = cjk_share(json.loads(line)["text"])
                query_languages[None if share is None else language_of(share)] += 1
                # the minority-script rule first (unchanged); the mixed rule otherwise
                if translation_target(share, kb_share, 0.5) is None:
                    fired += mixed_language(share, zh_documents, args.share) is not None
        every = Counter(documents)
        print(f"| {name} | {every['zh']} / {every['en']} / {every[None]} "
              f"| {sum(x == 'zh' for x in known)} / {sum(x == 'en' for x in known)} "
              f"| {query_languages['zh']} / {query_languages['en']} | {fired} |")


if __name__ == "__main__":
    main()
