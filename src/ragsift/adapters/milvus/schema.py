"""The Milvus collection layout of a ragsift index: fields, BM25 function, indexes, rows.

pymilvus is imported by the functions that need it, so importing this module does not.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ragsift.domain.index_records import IndexRecord

PRIMARY = "chunk_id"
DOCUMENT = "document_id"
KB = "kb_id"
TEXT = "text"
DENSE = "dense"
SPARSE = "sparse"
BM25_FUNCTION = "text_bm25"

# Nullable VARCHAR scope fields of IndexRecord; a null never equals any filter value.
SCOPE_FIELDS = ("source", "tenant_id", "dataset_id", "visibility")
ROLES = "allowed_roles"  # ARRAY<VARCHAR>; empty = unrestricted
VERSION_FIELDS = ("valid_from_seq", "valid_to_seq")  # INT64; to 0 = still valid

# Milvus limits VARCHAR to 65,535 bytes; ids and scope values get less to keep rows small.
MAX_ID_BYTES = 1024
MAX_SCOPE_BYTES = 8192
MAX_TEXT_BYTES = 65535
MAX_ROLES = 256
MAX_ROLE_BYTES = 1024

# `{"type": "chinese"}` is refused by milvus-lite and drops English tokens on Milvus 2.5;
# plain jieba keeps both. Lowercasing is done by ragsift (normalize_text): analyzer filters
# are ignored by milvus-lite, so relying on them would make the two engines disagree.
ANALYZER = {"tokenizer": "jieba"}
BM25_PARAMS = {"bm25_k1": 1.2, "bm25_b": 0.75}  # milvus-lite defaults k1 to 1.5, Milvus to 1.2
HNSW_PARAMS = {"M": 16, "efConstruction": 200}
MIN_EF = 64


def normalize_text(text: str) -> str:
    """NFKC-normalised and lowercased, as the embedded BM25 analyzer sees text."""
    return unicodedata.normalize("NFKC", text).lower()


def has_searchable_text(text: str) -> bool:
    """Whether a query has a letter or digit (punctuation-only queries match nothing)."""
    return any(ch.isalnum() for ch in text)


def build_schema(client: Any, dimension: int) -> Any:
    """The collection schema: kb_id as partition key, dense vector, BM25 sparse from text."""
    from pymilvus import DataType, Function, FunctionType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field(PRIMARY, DataType.VARCHAR, is_primary=True, max_length=MAX_ID_BYTES)
    schema.add_field(DOCUMENT, DataType.VARCHAR, max_length=MAX_ID_BYTES)
    schema.add_field(KB, DataType.VARCHAR, max_length=MAX_ID_BYTES, is_partition_key=True)
    schema.add_field(
        TEXT,
        DataType.VARCHAR,
        max_length=MAX_TEXT_BYTES,
        enable_analyzer=True,
        analyzer_params=ANALYZER,
    )
    for name in SCOPE_FIELDS:
        schema.add_field(name, DataType.VARCHAR, max_length=MAX_SCOPE_BYTES, nullable=True)
    schema.add_field(
        ROLES,
        DataType.ARRAY,
        element_type=DataType.VARCHAR,
        max_capacity=MAX_ROLES,
        max_length=MAX_ROLE_BYTES,
    )
    for name in VERSION_FIELDS:
        schema.add_field(name, DataType.INT64)
    schema.add_field(DENSE, DataType.FLOAT_VECTOR, dim=dimension)
    schema.add_field(SPARSE, DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name=BM25_FUNCTION,
            function_type=FunctionType.BM25,
            input_field_names=[TEXT],
            output_field_names=[SPARSE],
        )
    )
    return schema


def build_index_params(client: Any) -> Any:
    """HNSW/COSINE on the dense vector (other types fall back to brute force on some
    engines) and a BM25 inverted index on the sparse one."""
    params = client.prepare_index_params()
    params.add_index(DENSE, index_type="HNSW", metric_type="COSINE", params=dict(HNSW_PARAMS))
    params.add_index(
        SPARSE, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25", params=dict(BM25_PARAMS)
    )
    return params


def check_description(description: Mapping[str, Any], dimension: int) -> None:
    """Refuse an existing collection this version cannot use, with the reason."""
    fields = {str(f.get("name")): f for f in description.get("fields", [])}
    required = [PRIMARY, DOCUMENT, KB, TEXT, DENSE, SPARSE, *SCOPE_FIELDS, ROLES, *VERSION_FIELDS]
    missing = [name for name in required if name not in fields]
    name = description.get("collection_name", "?")
    if missing:
        raise ValueError(
            f"Milvus collection {name!r} lacks the fields {missing}; it was not created by this "
            "version of ragsift. Use another collection prefix or drop it and re-index."
        )
    found = int(fields[DENSE].get("params", {}).get("dim", 0))
    if found != dimension:
        raise ValueError(
            f"vector dimension {dimension} does not match the dimension {found} of the "
            f"Milvus collection {name!r}"
        )


def rows_of(records: Sequence[IndexRecord], vectors: NDArray[np.float32]) -> list[dict[str, Any]]:
    """Insertable rows; the sparse field is left out, as the BM25 function fills it."""
    rows: list[dict[str, Any]] = []
    for record, vector in zip(records, vectors, strict=True):
        row: dict[str, Any] = {
            PRIMARY: record.chunk_id,
            DOCUMENT: record.document_id,
            KB: record.kb_id,
            TEXT: normalize_text(record.text),
            DENSE: vector.tolist(),
        }
        for name in SCOPE_FIELDS:
            row[name] = getattr(record, name)
        row[ROLES] = sorted(set(record.allowed_roles))
        for name in VERSION_FIELDS:
            row[name] = int(getattr(record, name))
        rows.append(row)
    return rows


def check_records(records: Sequence[IndexRecord]) -> None:
    """Raise ValueError for a value Milvus would refuse, before anything is written."""
    for record in records:
        for name, limit in ((PRIMARY, MAX_ID_BYTES), (DOCUMENT, MAX_ID_BYTES), (KB, MAX_ID_BYTES)):
            _check_length(record, name, getattr(record, name), limit)
        if not record.chunk_id or not record.kb_id:
            raise ValueError(f"chunk {record.chunk_id!r}: chunk_id and kb_id must not be empty")
        _check_length(record, TEXT, normalize_text(record.text), MAX_TEXT_BYTES)
        for name in SCOPE_FIELDS:
            value = getattr(record, name)
            if value is not None:
                _check_length(record, name, value, MAX_SCOPE_BYTES)
        roles = set(record.allowed_roles)
        if len(roles) > MAX_ROLES:
            raise ValueError(
                f"chunk {record.chunk_id[:80]!r}: {len(roles)} allowed roles, over the limit of "
                f"{MAX_ROLES}"
            )
        for role in roles:
            _check_length(record, ROLES, role, MAX_ROLE_BYTES)
        for name in VERSION_FIELDS:
            if not 0 <= getattr(record, name) < 2**63:
                raise ValueError(f"chunk {record.chunk_id[:80]!r}: {name} must be in [0, 2**63)")


def _check_length(record: IndexRecord, field: str, value: str, limit: int) -> None:
    size = len(value.encode("utf-8"))
    if size > limit:
        raise ValueError(
            f"chunk {record.chunk_id[:80]!r}: {field} is {size} bytes in UTF-8, over the "
            f"Milvus limit of {limit}"
        )
