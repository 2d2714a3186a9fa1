"""Regenerate the synthetic texts of hybrid_scale.build (seed 11, 1M chunks) and write the
ragsift-analyzed tokens of the first N chunks of kb "big" (chunk_id \t tokens), plus queries.
Run with ragsift's venv: cd /work/main && PYTHONPATH=src .venv/bin/python /work/peers/pisa/gen_tokens.py N OUT"""

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, "/work/main/benchmarks")
from dense_ann_data import synthetic_centres
from search_latency import build_vocabulary, make_text

from ragsift.adapters.embedded_index.analyzer import analyzer_for
from ragsift.adapters.embedded_index.bm25_layout import kb_directory_name

N, OUT = int(sys.argv[1]), sys.argv[2]
CHUNKS, SEED, BATCH, DIM = 1_000_000, 11, 512, 384
ver = json.loads(Path(f"/tmp/h1m/index/sparse/{kb_directory_name('big')}/analyzer.json").read_text("utf-8"))["version"]
analyze = analyzer_for(ver)
print("analyzer version", ver, flush=True)
rng = np.random.default_rng(SEED)
words, probs = build_vocabulary(rng)
saved_words, saved_probs = json.loads(Path("/tmp/h1m/words.json").read_text("utf-8"))
assert words == saved_words and np.allclose(probs, saved_probs)
centres = synthetic_centres(32_000, rng)
assert np.allclose(centres, np.load("/tmp/h1m/centres.npy")), "centres differ: wrong seed?"
for start in range(0, CHUNKS, 65536):  # expand(): consume the same normals
    rng.standard_normal((min(CHUNKS, start + 65536) - start, DIM))
# fast make_text: the same draws as rng.choice(words, size=n, p=probs) (checked by fastcheck.py)
cdf = probs.cumsum()
cdf /= cdf[-1]
cjk = ["\u4e00" <= w[0] <= "\u9fff" for w in words]


def make_text_fast(rng, n):
    idx = cdf.searchsorted(rng.random(n), side="right")
    return "".join(words[i] if cjk[i] else f" {words[i]} " for i in idx).strip()


def kb_of(doc):
    return "mid" if doc % 10 == 0 else "big"
order = sorted(range(CHUNKS), key=lambda i: kb_of(i // 10))
t0, cpu0 = time.perf_counter(), time.process_time()
acpu = 0.0
with open(OUT, "w") as f:
    for lo in range(0, N, BATCH):
        if lo == 0:  # check the fast path against make_text on the first batch
            st = rng.bit_generator.state
            ref = [make_text(rng, words, probs, int(rng.integers(60, 121))) for _ in range(BATCH)]
            rng.bit_generator.state = st
        rows = order[lo : lo + BATCH]
        texts = [make_text_fast(rng, int(rng.integers(60, 121))) for _ in rows]
        if lo == 0:
            assert texts == ref, "fast path differs"
            print("fast path == make_text", flush=True)
        for n, (i, t) in enumerate(zip(rows, texts, strict=False)):
            if lo + n >= N:
                break
            c = time.process_time()
            toks = analyze(t)
            acpu += time.process_time() - c
            assert all(" " not in x and "\t" not in x and x for x in toks)
            f.write(f"{i}\t{' '.join(toks)}\n")
        if lo % 50_000 < BATCH:
            print(f"{lo} rows {time.perf_counter() - t0:.0f}s", flush=True)
print(f"done: analysis CPU {acpu:.1f}s, total {time.perf_counter() - t0:.1f}s wall", flush=True)
# queries as the probe makes them: rng seed 7, make_text 3-8 words, then continue
qrng = np.random.default_rng(7)
qs = [make_text(qrng, words, np.asarray(saved_probs), int(qrng.integers(3, 9))) for _ in range(200)]
json.dump(
    [{"text": q, "tokens": list(dict.fromkeys(analyze(q)))} for q in qs],
    open(OUT + ".queries.json", "w"),
    ensure_ascii=False,
)
