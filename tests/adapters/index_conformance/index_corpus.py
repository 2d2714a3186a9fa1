"""The fixed corpora of the index conformance suite: bilingual text, exact small vectors."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ragsift.domain.index_records import IndexRecord

DIM = 8

# Topic axes of the dense vectors: a passage points mostly along its topic's axis.
CAPITAL, PHONE, FOX, K8S, REFUND, LEAVE, HOTEL, OTHER = range(DIM)

# (chunk id, document id, source, text, dense direction as {axis: weight})
_PASSAGES: list[tuple[str, str, str, str, dict[int, float]]] = [
    ("zh-capital", "doc-zh", "wiki", "北京是中华人民共和国的首都，有很多历史古迹。",
     {CAPITAL: 1.0, OTHER: 0.1}),
    ("zh-phone", "doc-zh", "news", "苹果公司发布了新款手机，价格比去年更高。",
     {PHONE: 1.0, OTHER: 0.2}),
    ("en-fox", "doc-en", "wiki", "The Quick Brown Fox jumps over the lazy dog.",
     {FOX: 1.0}),
    ("en-k8s", "doc-en", "manual", "Kubernetes cluster upgrade guide for version v2.1",
     {K8S: 1.0, FOX: 0.3}),
    ("mixed-k8s", "doc-mixed", "manual", "如何升级 Kubernetes 集群到 v2.1 版本",
     {K8S: 1.0, CAPITAL: 0.5}),
    ("en-refund", "doc-billing", "faq",
     "Refund requests are processed within 14 days of the invoice date.",
     {REFUND: 1.0, HOTEL: 0.2}),
    ("zh-refund", "doc-billing", "faq", "退款申请会在开具发票后十四天内处理完毕。",
     {REFUND: 1.0, CAPITAL: 0.4}),
    ("zh-leave", "doc-hr", "hr", "员工每年有十五天带薪年假，未休完的年假可以结转五天。",
     {LEAVE: 1.0, CAPITAL: 0.3}),
    ("en-leave", "doc-hr", "hr",
     "Employees get fifteen days of paid annual leave; five unused days carry over.",
     {LEAVE: 1.0, FOX: 0.2}),
    ("en-hotel", "doc-travel", "travel",
     "The hotel limit per night is 800 yuan in tier-one cities.",
     {HOTEL: 1.0, REFUND: 0.3}),
]

DOCS_KB = "docs"


def direction(weights: dict[int, float]) -> NDArray[np.float32]:
    """A unit vector with these (axis: weight) components."""
    vector = np.zeros(DIM, dtype=np.float32)
    for axis, weight in weights.items():
        vector[axis] = weight
    unit: NDArray[np.float32] = vector / np.linalg.norm(vector)
    return unit


def bilingual() -> tuple[list[IndexRecord], NDArray[np.float32]]:
    """Ten short Chinese, English and mixed passages in kb `docs`, with their vectors."""
    records = [
        IndexRecord(chunk_id, document_id, DOCS_KB, text, source=source)
        for chunk_id, document_id, source, text, _ in _PASSAGES
    ]
    vectors = np.stack([direction(weights) for *_, weights in _PASSAGES])
    return records, vectors


def grid() -> tuple[list[IndexRecord], NDArray[np.float32]]:
    """48 chunks in kbs `grid1`/`grid2`, every one containing "alpha", with every
    combination of scope values (None and "" included) and random unit vectors."""
    records = [
        IndexRecord(
            chunk_id=f"g{i:02d}",
            document_id=f"gd{i // 4}",
            kb_id=("grid1", "grid2")[i // 24],
            text=f"alpha 文档 {i} {'北京' if i % 2 else 'Fox'}",
            source=("wiki", "faq", None, "")[i % 4],
            tenant_id=("t1", None)[i % 2],
            dataset_id=("ds", "ds2", "ds3")[i % 3],
            visibility=("public", "secret")[(i // 2) % 2],
        )
        for i in range(48)
    ]
    vectors = np.random.default_rng(7).standard_normal((48, DIM)).astype(np.float32)
    return records, vectors


# Values that would change the meaning of a query if pasted unescaped into a Milvus
# expression, a tantivy query or a path.
HOSTILE = [
    '" or kb_id != "',
    "' or kb_id != '",
    'x" || kb_id != "x',
    'a"] or document_id in ["',
    "\\",
    '\\"',
    '"',
    "'",
    "x\ny",
    "\\n",
    "kb_id != ''",
    "*",
    "../x",
    "知识库 \t tab",
]


def hostile() -> tuple[list[IndexRecord], NDArray[np.float32]]:
    """One chunk per hostile value in every string field of kb `hostile`, plus one chunk in
    a kb named by each hostile value, and a plain chunk; all contain "alpha"."""
    records = [
        IndexRecord(
            f"h{i:02d}", value, "hostile", f"alpha hostile {i}",
            source=value, tenant_id=value, dataset_id=value, visibility=value,
        )
        for i, value in enumerate(HOSTILE)
    ]
    records += [
        IndexRecord(f"k{i:02d}", f"kd{i:02d}", value, f"alpha kb {i}")
        for i, value in enumerate(HOSTILE)
    ]
    records.append(IndexRecord("plain", "plain-doc", "hostile", "alpha plain", source="wiki"))
    vectors = np.random.default_rng(11).standard_normal((len(records), DIM)).astype(np.float32)
    return records, vectors


def scoped() -> tuple[list[IndexRecord], NDArray[np.float32]]:
    """24 chunks of kb `scoped` with role restrictions and version windows; all "alpha"."""
    roles: list[tuple[str, ...]] = [(), ("hr",), ("hr", "admin"), ("finance",)]
    windows = [(0, 0), (1, 0), (1, 3), (2, 0), (3, 0), (2, 3)]
    records = [
        IndexRecord(
            chunk_id=f"s{i:02d}",
            document_id=f"sd{i // 3}",
            kb_id="scoped",
            text=f"alpha scoped {i}",
            allowed_roles=roles[i % 4],
            valid_from_seq=windows[i % 6][0],
            valid_to_seq=windows[i % 6][1],
        )
        for i in range(24)
    ]
    vectors = np.random.default_rng(5).standard_normal((24, DIM)).astype(np.float32)
    return records, vectors


def filter_id(search_filter: object) -> str:
    """A short test id naming the fields a SearchFilter sets."""
    from ragsift.domain.filters import SearchFilter

    assert isinstance(search_filter, SearchFilter)
    fields = search_filter.model_dump(exclude_defaults=True)
    return ",".join(
        f"{name}={sorted(value) if isinstance(value, frozenset) else value}"
        for name, value in fields.items()
    )
