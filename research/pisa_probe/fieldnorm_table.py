"""Recover tantivy's fieldnorm decoding (length -> length BM25 uses) empirically."""

import json
import math
import tempfile

import tantivy
from tantivy import Query

sb = tantivy.SchemaBuilder()
sb.add_integer_field("L", stored=True)
sb.add_text_field("text", tokenizer_name="whitespace", index_option="position")
schema = sb.build()
idx = tantivy.Index(schema, path=tempfile.mkdtemp())
w = idx.writer()
M = 3000
for L in range(1, M + 1):
    w.add_document(tantivy.Document(L=L, text=" ".join(["t"] + ["f"] * (L - 1))))
for _ in range(M):  # docs without t, so idf is positive
    w.add_document(tantivy.Document(L=1, text="g"))
w.commit()
w.wait_merging_threads()
idx.reload()
s = idx.searcher()
N = s.num_docs
total = sum(range(1, M + 1)) + M
avgdl = total / N
idf = math.log(1 + (N - M + 0.5) / (M + 0.5))
k1, b = 1.2, 0.75
table = {}
for sc, a in s.search(Query.term_query(schema, "text", "t"), M, count=False).hits:
    L = s.doc(a)["L"][0]
    dl = ((idf * (k1 + 1) / sc - 1) / k1 - (1 - b)) / b * avgdl
    table[L] = round(dl)
json.dump(table, open("/work/peers/pisa/data/fieldnorm.json", "w"))
print([(L, table[L]) for L in range(30, 200, 7)])
