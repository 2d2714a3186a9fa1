"""A calibrated relevance in 0..1 for each hit (issue 37, item 4).

Fused scores are on the scale of their fusion method (z-score sums near 5 or 8, RRF sums near
0.03), which frameworks that assume 0..1 (similarity cut-offs, score thresholds) cannot use.
`relevance` = logistic(a * fused score + b), with (a, b) per fusion method fitted on labelled
data (research/relevance_fit.py): an estimate of P(the hit is relevant).

Within one request it is monotone in the fused score. Across requests it is comparable only as
far as docs/quality.md ("Calibrated relevance") measures it: z-score and min-max fusion are
normalised per request, so the same relevance means "stands out as much from this request's
candidates", not an absolute similarity. When rerank ran, the hits are ordered by the rerank
score and relevance still maps the fused score (it need not fall with rank). Adding the
request's top dense cosine as a second feature did not separate relevant hits better on the
labelled sets, so it is left out. The data the constants were fitted on is not shipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Calibration:
    """relevance = logistic(weight * fused score + intercept)."""

    weight: float
    intercept: float


# fitted by research/relevance_fit.py on half of the afqmc-faq and cmrc2018 dev queries (top 10
# hits each, server defaults, no rerank); measured on the other half in docs/quality.md
CALIBRATIONS: dict[str, Calibration] = {
    "zscore": Calibration(0.7577, -6.0808),
    "weighted": Calibration(5.3289, -8.9203),
    "rrf": Calibration(380.51, -12.033),
}


def logistic(x: float) -> float:
    """1 / (1 + e^-x) without overflow."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def relevance(fused_score: float, fusion: str) -> float:
    """The calibrated relevance of a hit with `fused_score` in a request fused by `fusion`
    (rrf, weighted or zscore; another name uses zscore's), rounded to 4 places."""
    calibration = CALIBRATIONS.get(fusion, CALIBRATIONS["zscore"])
    return round(logistic(calibration.weight * fused_score + calibration.intercept), 4)
