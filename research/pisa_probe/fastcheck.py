import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, "/work/main/benchmarks")
from search_latency import make_text

words, probs = json.loads(Path("/tmp/h1m/words.json").read_text("utf-8"))
probs = np.asarray(probs)
warr = np.array(words, dtype=object)
cdf = probs.cumsum()
cdf /= cdf[-1]
cjk = np.array(["\u4e00" <= w[0] <= "\u9fff" for w in words])


def fast(rng, n):
    idx = cdf.searchsorted(rng.random(n), side="right")
    return "".join(words[i] if cjk[i] else f" {words[i]} " for i in idx).strip()


a, b = np.random.default_rng(3), np.random.default_rng(3)
t = time.perf_counter()
x = [make_text(a, words, probs, int(a.integers(60, 121))) for _ in range(2000)]
t1 = time.perf_counter()
y = [fast(b, int(b.integers(60, 121))) for _ in range(2000)]
t2 = time.perf_counter()
print(x == y, t1 - t, t2 - t1)
