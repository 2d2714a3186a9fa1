"""Checks every index backend applies to the vectors it is given (shape, finiteness, direction)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

Float32Array = NDArray[np.float32]


def checked_rows(vectors: Any, expected_rows: int, dimension: int) -> Float32Array:
    """`vectors` as a float32 matrix of `expected_rows` x `dimension` usable by cosine."""
    matrix: Float32Array = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != expected_rows:
        raise ValueError(f"expected {expected_rows} vectors, got an array of shape {matrix.shape}")
    if matrix.shape[1] != dimension:
        raise ValueError(
            f"vector dimension {matrix.shape[1]} does not match the index dimension {dimension}"
        )
    check_directions(matrix)
    return matrix


def checked_query(vector: Any, dimension: int) -> Float32Array:
    """One query vector, flattened, of the index's dimension and usable by cosine."""
    query: Float32Array = np.asarray(vector, dtype=np.float32).reshape(-1)
    if query.shape[0] != dimension:
        raise ValueError(
            f"query dimension {query.shape[0]} does not match the index dimension {dimension}"
        )
    check_directions(query.reshape(1, -1))
    return query


def check_directions(matrix: Float32Array) -> None:
    """Refuse NaN or infinite values and zero rows: cosine is undefined for them."""
    if not np.isfinite(matrix).all():
        raise ValueError("vectors must be finite (no NaN or infinity)")
    if matrix.size and (np.linalg.norm(matrix, axis=1) == 0).any():
        raise ValueError("zero vectors have no direction and cannot be searched by cosine")


def unit_rows(matrix: Float32Array) -> Float32Array:
    """Rows scaled to unit length, so a dot product is the cosine (rows already checked)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: Float32Array = np.ascontiguousarray(matrix / norms, dtype=np.float32)
    return unit
