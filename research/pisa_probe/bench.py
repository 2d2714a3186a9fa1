"""PISA (pyterrier-pisa, pretokenised) vs tantivy BM25 top-30 on ragsift's analyzed tokens.

Usage: venv/bin/python bench.py N [--tantivy-existing]   (tokens from data/tok_900k.txt)
  N: first N chunks of kb "big"; --tantivy-existing: use ragsift's own index of kb big in
  /tmp/h1m instead of building a fresh tantivy index (only right for N = 900000).
"""

import json
import math
import os
import resource
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyterrier_pisa
import tantivy
from pyterrier_pisa import PisaIndex, _pisathon
from tantivy import Occur, Query

N = int(sys.argv[1])
EXISTING = "--tantivy-existing" in sys.argv
ONLY_PISA = "--only-pisa" in sys.argv
K, K1, B = 30, 1.2, 0.75
HERE = os.environ.get("PISA_PROBE_DIR", "/work/peers/pisa")  # indexes, tokens, results
WORK = f"{HERE}/idx/{N}"
TOKFILE = os.environ.get("TOKFILE", f"{HERE}/data/tok_900k.txt")
os.makedirs(WORK, exist_ok=True)


def now():
    return time.perf_counter(), time.process_time()


def since(t):
    return time.perf_counter() - t[0], time.process_time() - t[1]


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def pct(xs, q):
    return float(np.quantile(np.asarray(xs), q)) * 1e3


print(
    f"N={N} pyterrier_pisa {pyterrier_pisa.__version__} tantivy {getattr(tantivy, '__version__', '?')} "
    f"load {load()}",
    flush=True,
)
REUSE = "--reuse" in sys.argv
t = now()
docs = []
if REUSE:
    N_load = 0
with open(TOKFILE) as f:
    for n, line in enumerate(f):
        if n >= N or REUSE:
            break
        cid, toks = line.rstrip("\n").split("\t")
        docs.append((cid, toks))
assert REUSE or len(docs) == N, len(docs)
queries = json.loads(Path(TOKFILE + ".queries.json").read_text("utf-8"))
print(f"loaded {N} token lists in {since(t)[0]:.1f}s", flush=True)

# ---------------- PISA index (pretokenised: term -> tf dicts, no stemming, no stop words)
pdir = f"{WORK}/pisa"
if not REUSE:
    shutil.rmtree(pdir, ignore_errors=True)
pidx = PisaIndex(pdir, stemmer="none", stops="none", threads=1)
t = now()
if not REUSE:
    pidx.toks_indexer(text_field="toks", scale=1.0).index(
        {"docno": cid, "toks": Counter(toks.split(" "))} for cid, toks in docs
    )
inv_wall, inv_cpu = since(t)
print(
    f"PISA inversion (python toks indexer + merge): {inv_wall:.1f}s wall {inv_cpu:.1f} CPU-s, "
    f"load {load()}",
    flush=True,
)


def context(quantize=False):
    ctxt = _pisathon.RetrievalContext()
    _pisathon.prepare_index(
        ctxt,
        pdir,
        "block_simdbp",
        "bm25",
        "",
        quantize=1 if quantize else 0,
        bm25_k1=K1,
        bm25_b=B,
        stop_fname="",
    )
    return ctxt


t = now()
ctx = context()
prep_wall, prep_cpu = since(t)
print(
    f"PISA wand data + compression (bm25 k1={K1} b={B}, block_simdbp, blocks of 64): "
    f"{prep_wall:.1f}s wall {prep_cpu:.1f} CPU-s",
    flush=True,
)
t = now()
ctxq = context(quantize=True)
q_wall, q_cpu = since(t)
print(
    f"PISA quantized impacts (precompute_impact) wand data + compression: {q_wall:.1f}s wall "
    f"{q_cpu:.1f} CPU-s",
    flush=True,
)
def du(p):
    return sum(os.path.getsize(os.path.join(d, x)) for d, _, fs in os.walk(p) for x in fs)
print(f"PISA dir size {du(pdir) / 2**20:.0f} MiB; files: {sorted(os.listdir(pdir))}", flush=True)

# ---------------- PISA impact index with tantivy's (Lucene) BM25: idf = ln(1 + (N-df+.5)/(df+.5)),
# precomputed per (term, doc) as integer impacts (x1000), searched with PISA's "quantized" scorer
ldir = f"{WORK}/pisa_lucene"
if not REUSE:
    shutil.rmtree(ldir, ignore_errors=True)
t = now()
df, total = Counter(), 0
for _, toks in [] if REUSE else docs:
    tl = toks.split(" ")
    total += len(tl)
    df.update(set(tl))
avgdl = total / max(1, N)
idf = {x: math.log(1 + (N - d + 0.5) / (d + 0.5)) for x, d in df.items()}
FIELDNORM = {int(k): v for k, v in json.loads(Path(f"{HERE}/data/fieldnorm.json").read_text("utf-8")).items()}


def impacts(toks):  # document length as tantivy's 1-byte fieldnorm decodes it (fieldnorm_table.py)
    tl = toks.split(" ")
    norm = K1 * (1 - B + B * FIELDNORM.get(len(tl), len(tl)) / avgdl)
    return {
        x: idf[x] * tf * (K1 + 1) / (tf + norm) + 0.0005 for x, tf in Counter(tl).items()
    }  # +0.0005: int() rounds


lidx = PisaIndex(ldir, stemmer="none", stops="none", threads=1)
if not REUSE:
    lidx.toks_indexer(text_field="toks", scale=1000.0).index(
        {"docno": cid, "toks": impacts(toks)} for cid, toks in docs
    )
ctxl = _pisathon.RetrievalContext()
_pisathon.prepare_index(ctxl, ldir, "block_simdbp", "quantized", "", quantize=0, stop_fname="")
l_wall, l_cpu = since(t)
print(
    f"PISA Lucene-BM25 impact index (df pass + python impacts + inversion + wand/compress): "
    f"{l_wall:.1f}s wall {l_cpu:.1f} CPU-s, {du(ldir) / 2**20:.0f} MiB, load {load()}",
    flush=True,
)

qidx = np.empty(K, dtype=np.int32)
qdoc = np.empty(K, dtype=object)
qrank = np.empty(K, dtype=np.int32)
qscore = np.empty(K, dtype=np.float32)


def pisa_search(ctxt, algo, toks):
    n = _pisathon.retrieve(
        ctxt,
        algo,
        [(0, {x: 1.0 for x in toks})],
        k=K,
        threads=1,
        query_weighted=0,
        pretokenised=True,
        result_qidxs=qidx,
        result_docnos=qdoc,
        result_ranks=qrank,
        result_scores=qscore,
    )
    return [(float(qscore[i]), qdoc[i]) for i in range(n)]


# ---------------- tantivy
if EXISTING:
    docs = None
    import gc

    gc.collect()
    # kb_directory_name('big') from ragsift.adapters.embedded_index.bm25_layout (needs ragsift's venv)
    tpath = "/tmp/h1m/index/sparse/95c4bea12e4edcf8aad730a222793324dc42c29d"
    tindex = tantivy.Index.open(tpath)
    t_wall = t_cpu = float("nan")
    print(f"tantivy: ragsift's own kb-big index {tpath}", flush=True)
elif not ONLY_PISA and REUSE:
    tpath = f"{WORK}/tantivy"
    tindex = tantivy.Index.open(tpath)
    t_wall = t_cpu = float("nan")
elif not ONLY_PISA:
    tpath = f"{WORK}/tantivy"
    shutil.rmtree(tpath, ignore_errors=True)
    os.makedirs(tpath)
    sb = tantivy.SchemaBuilder()  # as ragsift's bm25_schema (text: whitespace, positions)
    sb.add_text_field("chunk_id", stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("text", tokenizer_name="whitespace", index_option="position")
    tindex = tantivy.Index(sb.build(), path=tpath)
    t = now()
    w = tindex.writer()
    for cid, toks in docs:
        w.add_document(tantivy.Document(chunk_id=cid, text=toks))
    w.commit()
    w.wait_merging_threads()
    t_wall, t_cpu = since(t)
    print(f"tantivy build: {t_wall:.1f}s wall {t_cpu:.1f} CPU-s, load {load()}", flush=True)
if not ONLY_PISA:
    tindex.reload()
    s = tindex.searcher()
    schema = tindex.schema
    print(
        f"tantivy docs {s.num_docs}, segments {len(s.segment_readers()) if hasattr(s, 'segment_readers') else '?'}",
        flush=True,
    )

    def tantivy_search(toks):
        q = Query.boolean_query([(Occur.Should, Query.term_query(schema, "text", x)) for x in toks])
        return s.search(q, K, count=False).hits


# ---------------- queries
qtoks = [q["tokens"] for q in queries]
results = {}


def timed(name, fn):
    for toks in qtoks[:20]:
        fn(toks)  # warm-up (page cache, lazy init)
    ts, out = [], []
    c0 = time.process_time()
    for toks in qtoks:
        a = time.perf_counter()
        r = fn(toks)
        ts.append(time.perf_counter() - a)
        out.append(r)
    cpu = (time.process_time() - c0) / len(qtoks) * 1e3
    results[name] = out
    print(
        f"{name:36s} p50 {pct(ts, 0.5):7.3f} ms  p95 {pct(ts, 0.95):7.3f} ms  mean {np.mean(ts) * 1e3:7.3f}"
        f"  cpu/query {cpu:6.3f} ms  load {load()}",
        flush=True,
    )
    return pct(ts, 0.5), pct(ts, 0.95)


timings = {}
if not ONLY_PISA:
    timings["tantivy"] = timed("tantivy BooleanQuery(Should) top-30", tantivy_search)
    results["tantivy"] = [
        [(sc, s.doc(a)["chunk_id"][0]) for sc, a in r]
        for r in results["tantivy BooleanQuery(Should) top-30"]
    ]
for algo in ("block_max_wand", "maxscore", "block_max_maxscore", "wand", "ranked_or"):
    timings[algo] = timed(f"PISA bm25 {algo}", lambda toks, algo=algo: pisa_search(ctx, algo, toks))
for algo in ("block_max_wand", "maxscore", "ranked_or"):
    timings["l:" + algo] = timed(
        f"PISA lucene-impact {algo}", lambda toks, algo=algo: pisa_search(ctxl, algo, toks)
    )
for algo in ("block_max_wand", "maxscore"):
    timings["q:" + algo] = timed(
        f"PISA quantized-impact {algo}", lambda toks, algo=algo: pisa_search(ctxq, algo, toks)
    )


# ---------------- agreement
def overlap(a, b):
    return np.mean(
        [len({d for _, d in x} & {d for _, d in y}) / max(1, len(y)) for x, y in zip(a, b, strict=False)]
    )


ref_or = results["PISA bm25 ranked_or"]
print("\noverlap with PISA exhaustive (ranked_or), same scorer:")
for algo in ("block_max_wand", "maxscore", "block_max_maxscore", "wand"):
    print(f"  {algo}: {overlap(results['PISA bm25 ' + algo], ref_or):.4f}")
if not ONLY_PISA:
    tv = results["tantivy"]
    print("overlap with tantivy top-30:")
    for name in [n for n in results if n.startswith("PISA")]:
        print(f"  {name}: {overlap(results[name], tv):.4f}")
    # scores on common docs: PISA (exhaustive) vs tantivy
    for label, ref in (
        ("PISA bm25", ref_or),
        ("PISA lucene-impact", results["PISA lucene-impact ranked_or"]),
    ):
        ratios, exact_same = [], 0
        for x, y in zip(ref, tv, strict=False):
            px = {d: sc for sc, d in x}
            ratios += [px[d] / sc for sc, d in y if d in px and sc > 0]
            exact_same += [d for _, d in x] == [d for _, d in y]
        if label.endswith("impact"):
            ratios = [r / 1000 for r in ratios]  # impacts x1000
        print(
            f"{label}/tantivy score ratio on shared docs: median {np.median(ratios):.4f} "
            f"min {np.min(ratios):.4f} max {np.max(ratios):.4f}; identical top-30 order in "
            f"{exact_same}/{len(tv)} queries"
        )
    # why: idf. tantivy idf=ln(1+(N-df+.5)/(df+.5)); PISA idf=max(1e-6, ln((N-df+.5)/(df+.5)))
    Nd = s.num_docs
    mism = (
        "n/a (--reuse)"
        if REUSE
        else sum(s.doc_freq("text", x) != df[x] for toks in qtoks for x in toks if x in df)
    )
    print(
        f"tantivy docs {Nd} vs regenerated {N}; query-term df mismatches tantivy vs regenerated tokens: {mism}"
    )
    dfr = [s.doc_freq("text", x) / Nd for toks in qtoks for x in toks]
    print(
        f"query terms: {len(dfr)}, with df/N > 0.5 (PISA idf clamped to ~0): "
        f"{sum(d > 0.5 for d in dfr)}, df/N > 0.1: {sum(d > 0.1 for d in dfr)}; "
        f"queries with such a term: {sum(any(s.doc_freq('text', x) / Nd > 0.5 for x in toks) for toks in qtoks)}"
    )
    for i in range(2):
        print(
            f"q{i} tokens {qtoks[i]}\n  tantivy {[(round(a, 2), d) for a, d in tv[i][:5]]}\n"
            f"  pisa    {[(round(a, 2), d) for a, d in ref_or[i][:5]]}"
        )
json.dump(
    {
        "N": N,
        "timings": timings,
        "pisa_inversion": [inv_wall, inv_cpu],
        "pisa_prepare": [prep_wall, prep_cpu],
        "pisa_prepare_quantized": [q_wall, q_cpu],
        "pisa_lucene_build": [l_wall, l_cpu],
        "tantivy_build": None if ONLY_PISA else [t_wall, t_cpu],
    },
    open(f"{HERE}/result_{N}{'_reuse' if REUSE else ''}.json", "w"),
    indent=1,
)
print(
    f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB, load {load()}, "
    f"{time.strftime('%H:%M:%S')}",
    flush=True,
)
