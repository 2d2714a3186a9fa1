"""The citation and image check applied to a streamed answer as it arrives, so that the
concatenated deltas are exactly the final, checked answer (chat/assets.py:validate_answer).

The model's text is held back from any place where what follows could still change it: a
link that may still be open (`[来源 1](citati`, `[note]`, `![`), a bare `asset:` URL or a
word that may grow into one, and trailing whitespace (a removed link takes the spaces before
it along). The text before that point is checked as the final answer would be, and only what
goes beyond the text already sent is sent; the rest comes when the stream ends.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from ragsift.chat.assets import validate_answer
from ragsift.domain.chat import Evidence

logger = logging.getLogger(__name__)


def _prefixes_of(word: str, then: str) -> str:
    """A pattern for any start of `word` (empty included), `then` after all of it."""
    pattern = then
    for char in reversed(word):
        pattern = f"(?:{re.escape(char)}{pattern})?"
    return pattern


_BARE_URL = _prefixes_of("asset://", r"[^\s)\]>]*")
# what may still become (part of) a link: an open label or target (500: the longest label
# the image-link check reads), a lone `!`, a bare asset URL or a start of one
_OPEN_TAIL = re.compile(
    r"!?\[[^\[\]\n]{0,500}(?:\]|\]\([^)\n]*)?$"
    r"|!$"
    rf"|(?<![\w/])<?{_BARE_URL}$",
    re.IGNORECASE,
)


def settled_prefix(raw: str) -> str:
    """The longest start of `raw` that no later text can change the check of."""
    text = raw.rstrip()
    while True:
        tail = _OPEN_TAIL.search(text)
        if tail is None or tail.start() == len(text):
            return text
        text = text[: tail.start()].rstrip()


class CheckedStream:
    """Turns a model's raw deltas into deltas of the checked answer."""

    def __init__(self, evidence: Sequence[Evidence]) -> None:
        self._evidence = evidence
        self._raw: list[str] = []
        self._sent = ""

    @property
    def sent(self) -> str:
        """The checked text sent so far."""
        return self._sent

    def feed(self, delta: str) -> str:
        """The checked text this raw piece settles (maybe empty)."""
        self._raw.append(delta)
        settled = settled_prefix("".join(self._raw))
        return self._advance(validate_answer(settled, self._evidence).answer)

    def finish(self, answer: str) -> str:
        """The rest of the final checked `answer` after what was sent."""
        return self._advance(answer)

    def _advance(self, checked: str) -> str:
        if not checked.startswith(self._sent):
            # cannot happen for the check as written; sending nothing keeps deltas a prefix
            logger.warning("streamed answer diverged from its check; holding the rest back")
            return ""
        new = checked[len(self._sent):]
        self._sent = checked
        return new
