"""What a metadata filter costs tantivy as document keys against metadata terms (issue 36).

Builds (once, into DIR) a bare tantivy index of 100,000 synthetic chunks of
metadata_filter_scale.py (its texts, documents of 10 chunks, its metadata), committed every
512 chunks as ragsift's writer does (7 segments), holding each chunk's 48-bit document key
and its metadata in a JSON field; then times, per filter shape, the text query restricted by
the term set of the passing documents' keys and by the metadata terms (the passing values'
terms; ranges as the years present), median thread CPU ms over 100 queries, and checks both
give the same hits.

Usage: python research/metadata_terms_probe.py DIR
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import tantivy
from tantivy import Occur, Query

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import metadata_filter_scale as scale
from document_ids import document_id
from search_latency import build_vocabulary

from ragsift.adapters.embedded_index.analyzer import analyze
from ragsift.adapters.embedded_index.bm25_schema import bm25_query, document_key

CHUNKS = 100_000


def schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("chunk_id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("text", tokenizer_name="whitespace", index_option="position")
    builder.add_unsigned_field("document_key", indexed=True)
    builder.add_json_field("meta", tokenizer_name="raw", index_option="basic")
    return builder.build()


def build(directory: Path, schema_: tantivy.Schema) -> None:
    index = tantivy.Index(schema_, path=str(directory))
    writer = index.writer(heap_size=64_000_000, num_threads=1)
    rng = np.random.default_rng(36)
    words, probs = build_vocabulary(rng)
    rendered = scale.rendered_words(words)
    for lo in range(0, CHUNKS, 512):
        rows = range(lo, min(CHUNKS, lo + 512))
        texts = scale.texts(rng, rendered, probs, [int(x) for x in rng.integers(60, 121, 512)])
        for i, text in zip(rows, texts, strict=False):
            doc = tantivy.Document(chunk_id=str(i), text=" ".join(analyze(text)))
            doc.add_unsigned("document_key", document_key(document_id(i // 10, "uuid")))
            doc.add_json("meta", json.dumps(scale.metadata_of(i // 10)))
            writer.add_document(doc)
        writer.commit()
    writer.wait_merging_threads()
    (directory / "built").touch()


def main() -> None:
    directory = Path(sys.argv[1])
    directory.mkdir(parents=True, exist_ok=True)
    schema_ = schema()
    if not (directory / "built").exists():
        build(directory, schema_)
    index = tantivy.Index.open(str(directory))
    searcher = index.searcher()
    rng = np.random.default_rng(37)
    words, probs = build_vocabulary(np.random.default_rng(36))
    queries = scale.texts(rng, scale.rendered_words(words), probs,
                          [int(x) for x in rng.integers(3, 9, 100)])
    terms = [[(t, 1.0) for t in dict.fromkeys(analyze(q))] for q in queries]

    def meta(path: str, *values: Any) -> Query:
        parts = [Query.term_query(schema_, f"meta.{path}", v) for v in values]
        return parts[0] if len(parts) == 1 else Query.boolean_query(
            [(Occur.Should, part) for part in parts])

    def keys(holds: Callable[[dict[str, Any]], bool]) -> Query:
        passing = {document_key(document_id(d, "uuid")) for d in range(CHUNKS // 10)
                   if holds(scale.metadata_of(d))}
        return Query.term_set_query(schema_, "document_key", sorted(passing))

    shapes = {
        "dept = hr": (keys(lambda m: m["dept"] == "hr"), meta("dept", "hr")),
        "tags $contains t3": (keys(lambda m: "t3" in m["tags"]), meta("tags", "t3")),
        "$or of two": (
            keys(lambda m: m["dept"] == "hr" or (m["dept"] == "it" and m["year"] < 2024)),
            Query.boolean_query([(Occur.Should, meta("dept", "hr")), (Occur.Should,
                                 Query.boolean_query([(Occur.Must, meta("dept", "it")), (
                                     Occur.Must, meta("year", *range(2015, 2024)))]))])),
        "$in 3 depts and a year range": (
            keys(lambda m: m["dept"] in ("hr", "it", "qa") and 2015 <= m["year"] <= 2019),
            Query.boolean_query([(Occur.Must, meta("dept", "hr", "it", "qa")),
                                 (Occur.Must, meta("year", *range(2015, 2020)))])),
    }

    def cpu_ms(restriction: Query | None) -> float:
        def run(i: int) -> Any:
            return searcher.search(bm25_query(schema_, terms[i], [] if restriction is None
                                              else [restriction]), 30, count=False).hits
        for i in range(5):
            run(i)
        times = []
        for i in range(len(queries)):
            started = time.thread_time()
            run(i)
            times.append(time.thread_time() - started)
        return statistics.median(times) * 1e3

    print(f"{searcher.num_segments} segments; text query alone {cpu_ms(None):.2f} ms")
    for name, (by_keys, by_terms) in shapes.items():
        same = all(
            [a for _, a in searcher.search(bm25_query(schema_, terms[i], [by_keys]), 30).hits]
            == [a for _, a in searcher.search(bm25_query(schema_, terms[i], [by_terms]), 30).hits]
            for i in range(20))
        print(f"{name}: keys {cpu_ms(by_keys):.2f} ms, terms {cpu_ms(by_terms):.2f} ms, "
              f"same hits {same}")


if __name__ == "__main__":
    main()
