"""Bytes to text for the plain-text formats (TXT, Markdown, HTML).

UTF-8 first (a BOM is stripped), then a UTF-16 BOM, then GB18030 (a superset of GBK and GB2312,
the usual legacy encoding of Chinese files). GB18030 accepts many byte strings that are not text,
so its result must also look like text.

The rule for binary content, whatever the file's name says:

- a NUL byte outside a UTF-16 file (images, archives, executables and Office files all have
  them: PNG, ZIP and ELF headers do);
- bytes that decode neither as UTF-8 nor as GB18030, or GB18030 text with less than 85 %
  plausible characters (Latin, Greek, Cyrillic, punctuation, symbols, CJK);
- more stray controls than 4 and than 5 % of the characters. Stray controls are the C0
  controls and DEL, except tab, newline, vertical tab, form feed, carriage return, SUB (\x1a,
  the old DOS end-of-file mark) and ESC (\x1b, terminal colours in logs), which real text
  holds. The allowance of 4 keeps a short line with one odd control (a title with a \x1a,
  say) text; a binary file without NUL bytes is refused by its share.

The decoder returns the text it accepts unchanged; the sections' normalisation
(ragsift.ingestion.parsers.base) then drops the controls, so chunks hold none.
"""

from __future__ import annotations

import logging
import re

from ragsift.domain.errors import DocumentRejected

logger = logging.getLogger(__name__)

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_MAX_CONTROL_SHARE = 0.05
_STRAY_CONTROLS_ALLOWED = 4
_MIN_PLAUSIBLE_SHARE = 0.85
# C0 controls and DEL other than \t \n \v \f \r, SUB and ESC. C1 controls (U+0080-U+009F)
# are not counted: UTF-8 text decoded twice as cp1252 ("â€™") is full of them and still text.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x19\x1c-\x1f\x7f]")
# Outside what a GB18030 text file plausibly holds: Latin, Greek/Cyrillic, punctuation and
# symbols, CJK (radicals, punctuation, kana, bopomofo, ideographs), full-width forms.
_IMPLAUSIBLE = re.compile(
    r"[^\x00-\u024f\u0391-\u0451\u2000-\u27bf\u2e80-\u312f\u31c0-\u9fff"
    r"\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]"
)

BINARY_MESSAGE = "file is not text (binary content)"


def decode_text(data: bytes) -> str:
    """Decode a text file, rejecting binary content, unknown encodings and empty files."""
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    elif data.startswith(_UTF16_BOMS):
        return _checked(_decode_utf16(data))
    if b"\x00" in data:
        raise DocumentRejected(BINARY_MESSAGE)
    try:
        return _checked(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    try:
        text = data.decode("gb18030")
    except UnicodeDecodeError as exc:
        raise DocumentRejected(
            "file is not text (binary content, or an encoding other than UTF-8 and GB18030)"
        ) from exc
    text = _checked(text)
    if _plausible_share(text) < _MIN_PLAUSIBLE_SHARE:
        raise DocumentRejected(BINARY_MESSAGE)
    logger.debug("decoded text file as GB18030")
    return text


def _decode_utf16(data: bytes) -> str:
    try:
        return data.decode("utf-16")
    except UnicodeDecodeError as exc:
        raise DocumentRejected("file is not valid UTF-16 text") from exc


def _checked(text: str) -> str:
    text = text.lstrip("\ufeff")
    if not text.strip():
        raise DocumentRejected("file is empty")
    if _looks_binary(len(_CONTROL.findall(text)), len(text)):
        raise DocumentRejected(BINARY_MESSAGE)
    return text


def _looks_binary(controls: int, characters: int) -> bool:
    return controls > max(_STRAY_CONTROLS_ALLOWED, characters * _MAX_CONTROL_SHARE)


def _plausible_share(text: str) -> float:
    return 1.0 - len(_IMPLAUSIBLE.findall(text)) / len(text)
