"""The citation and image check applied to a streamed answer as it arrives, so that the
concatenated deltas are exactly the final, checked answer (chat/assets.py:validate_answer).

The model's text is held back from any place where what follows could still change it: a
link that may still be open (`[来源 1](citati`, `[note]`, `![`), a bare `asset:` URL or a
word that may grow into one, and trailing whitespace (a removed link takes the spaces before
it along). The text before that point is checked as the final answer would be, and only what
goes beyond the text already sent is sent; the rest comes when the stream ends.

Checking the whole text on every delta would cost the square of the answer's length (a 28,000
character answer: over a minute of event-loop CPU). The check is local to a line, so whole
lines are checked once and set aside (`_commit`): only the lines still open are checked
again, and a cut is made only where no link can span it and the check of the text cut there
equals the check of the two parts.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragsift.chat.assets import validate_assets
from ragsift.chat.citations import validate_citations
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


# the end of text a link of the next line could continue: `](` (then only spaces) or an
# open citation target (then spaces), which Markdown's `\s*` lets run over a line break
_LINK_OPEN_AT_END = re.compile(
    r"\(\s*$|\]\(\s*<?citation:(?://)?[^()<>\n]{0,200}>?\s*$", re.IGNORECASE)
# the lines set aside are checked again past this many characters (a cut costs one check)
_COMMIT_CHARS = 512
# text with none of these, after text not ending a link, is its own check
_LINK_CHARS = frozenset("[]()<>!:")
_LINK_ENDS = ")>"


def settled_prefix(raw: str) -> str:
    """The longest start of `raw` that no later text can change the check of."""
    text = raw.rstrip()
    while True:
        tail = _OPEN_TAIL.search(text)
        if tail is None or tail.start() == len(text):
            return text
        text = text[: tail.start()].rstrip()


@dataclass(frozen=True, slots=True)
class _Checked:
    """A text's check: its answer, the image check's answer (before the citation check) and
    whether that removed a link (then the whole answer loses its trailing spaces,
    chat/assets.py:validate_assets)."""

    answer: str
    linked: str
    removed_image: bool


def _check(text: str, evidence: Sequence[Evidence]) -> _Checked:
    """chat/assets.py:validate_answer's answer, with what joining two checks needs."""
    linked = validate_assets(text, evidence)
    cited = validate_citations(linked.answer, evidence)
    return _Checked(cited.answer, linked.answer, bool(linked.removed))


def _joined(head: str, tail: _Checked) -> str:
    """The answer of a text whose lines up to a break no link spans were checked as `head`,
    then the rest as `tail`: as one check, the image check strips the end of the answer when
    the tail's removed link left nothing of it, the head's last spaces included."""
    if tail.removed_image and not tail.linked:
        return head.rstrip() + tail.answer
    return head + tail.answer


class CheckedStream:
    """Turns a model's raw deltas into deltas of the checked answer."""

    def __init__(self, evidence: Sequence[Evidence]) -> None:
        self._evidence = evidence
        self._sent = ""
        self._head = ""  # the answer of the lines set aside (checked once)
        self._tail = ""  # the raw text after them
        self._refused = -1  # the tail's break a cut was refused at (not tried again)
        self._checked: tuple[str, str] | None = None  # the settled tail last checked, answer

    @property
    def sent(self) -> str:
        """The checked text sent so far."""
        return self._sent

    def feed(self, delta: str) -> str:
        """The checked text this raw piece settles (maybe empty)."""
        self._tail += delta
        settled = settled_prefix(self._tail)
        if not settled:  # nothing past the lines set aside is settled yet
            return ""
        settled = self._commit(settled)
        return self._advance(self._answer(settled))

    def _answer(self, settled: str) -> str:
        """The checked answer up to the settled tail; plain text after the tail last checked
        (no link's character, not right after a link: nothing it could change) is appended
        unchecked."""
        if self._checked is not None:
            before, answer = self._checked
            added = settled[len(before):]
            if (settled.startswith(before) and before[-1:] not in _LINK_ENDS
                    and not _LINK_CHARS.intersection(added)):
                self._checked = (settled, answer + added)
                return answer + added
        answer = _joined(self._head, _check(settled, self._evidence))
        self._checked = (settled, answer)
        return answer

    def finish(self, answer: str) -> str:
        """The rest of the final checked `answer` after what was sent."""
        return self._advance(answer)

    def _commit(self, settled: str) -> str:
        """Set the settled tail's lines aside, up to its last line break, where that is
        safe: no link open at the break, and checking the parts gives the whole's answer.
        Returns what is left of `settled`."""
        end = settled.rfind("\n") + 1
        if len(settled) < _COMMIT_CHARS or end == 0 or end == self._refused:
            return settled
        part, rest = settled[:end], settled[end:]
        head = _check(part, self._evidence)  # ends with a line break: no end stripped
        if (_LINK_OPEN_AT_END.search(part) or _LINK_OPEN_AT_END.search(head.linked)
                or _joined(head.answer, _check(rest, self._evidence))
                != _check(settled, self._evidence).answer):
            self._refused = end
            return settled
        self._head += head.answer
        self._tail = self._tail[end:]
        self._refused = -1
        self._checked = None
        return rest

    def _advance(self, checked: str) -> str:
        if not checked.startswith(self._sent):
            # cannot happen for the check as written; sending nothing keeps deltas a prefix
            logger.warning("streamed answer diverged from its check; holding the rest back")
            return ""
        new = checked[len(self._sent):]
        self._sent = checked
        return new
