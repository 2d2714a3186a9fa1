"""Check a ZIP-based Office package (DOCX) against ParseLimits before python-docx reads it.

python-docx (docx.opc) opens the package with zipfile, reads every part it reaches with
ZipFile.read, and parses each XML part into a whole lxml tree. None of that can be bounded from
outside once it starts, so the package is checked first, in three steps that keep nothing in
memory:

1. The central directory: member count, declared sizes in all, compression ratio per member
   (check_zip_container), before anything is inflated.
2. Every member is inflated once, in 1 MiB pieces, and must end exactly at its declared size
   with its CRC. zipfile returns no more than the declared size, but ZipFile.read (what
   python-docx calls) inflates up to 2 GiB in one step before cutting: a 1 MB member declaring
   2 KiB cost 2.1 GB there. Once every member is known to hold what it declares, python-docx's
   reads are bounded by the declared sizes checked in step 1.
3. Every XML part python-docx would parse ([Content_Types].xml, the .rels parts, and parts of an
   XML content type other than images) is fed through an lxml parser target that builds no
   tree. It refuses any DTD (the OPC standard forbids them in package parts, and an entity bomb
   needs one), nesting deeper than max_xml_depth, and, over all parts together, more elements,
   paragraphs or text characters than the limits allow.

python-docx then reads the package itself: a second inflate of at most max_uncompressed_bytes.
"""

from __future__ import annotations

import io
import logging
import zipfile
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from lxml import etree

from ragsift.domain.errors import DocumentRejected
from ragsift.ingestion.parsers.limits import ParseLimits, check_zip_container, reject

if TYPE_CHECKING:
    from lxml.etree import ParserTarget

logger = logging.getLogger(__name__)

_CONTENT_TYPES = "[Content_Types].xml"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_PARAGRAPH = _W + "p"
_READ_SIZE = 1024 * 1024


class PackageRejected(Exception):
    """The package is not a usable ZIP/OPC container; the message is the reason."""


@dataclass(frozen=True, slots=True)
class OfficeKind:
    """How the errors of one Office format name it: DOCX, "a DOCX document", "a Word
    document", ".doc"."""

    name: str
    noun: str
    described: str
    legacy: str


def check_office_file(
    data: bytes, limits: ParseLimits, kind: OfficeKind, streamed_prefix: str | None = None
) -> None:
    """check_package() on a file's bytes, every failure a DocumentRejected naming the format."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            check_package(archive, limits, kind.name, streamed_prefix)
    except zipfile.BadZipFile as exc:
        raise DocumentRejected(
            f"file is not {kind.noun} (not a ZIP package; legacy {kind.legacy}?)"
        ) from exc
    except PackageRejected as exc:
        raise DocumentRejected(f"{kind.name} is corrupt or not {kind.described} ({exc})") from exc


def check_package(
    archive: zipfile.ZipFile, limits: ParseLimits, kind: str = "DOCX",
    streamed_prefix: str | None = None,
) -> None:
    """Raise DocumentRejected when the package breaches a limit, PackageRejected when broken.

    Parts under `streamed_prefix` (an XLSX's "xl/worksheets/") are read by a streaming parser
    that never builds their tree, and bounded by its own limits (rows, columns, cells): their
    elements are not counted against max_xml_elements; DTDs and depth are checked as anywhere.
    """
    check_zip_container(archive, limits, kind)
    totals = _Totals(limits, kind)
    members = archive.infolist()
    types = next((member for member in members if member.filename == _CONTENT_TYPES), None)
    if types is None:
        raise PackageRejected(f"no {_CONTENT_TYPES}")
    content_types = _ContentTypes()
    _stream(archive, types, _XmlScan(totals, types.filename, content_types))
    for member in members:
        if member is types or member.is_dir():
            continue
        xml = content_types.is_parsed_as_xml(member.filename)
        counted = streamed_prefix is None or not member.filename.startswith(streamed_prefix)
        _stream(archive, member, _XmlScan(totals, member.filename, count=counted) if xml
                else None)
    logger.debug(
        "%s package checked: %d members, %d XML elements, %d paragraphs",
        kind, len(members), totals.elements, totals.paragraphs,
    )


def _stream(archive: zipfile.ZipFile, member: zipfile.ZipInfo, scan: _XmlScan | None) -> None:
    """Inflate one member in pieces, feeding an XML scan if given; nothing is kept."""
    if member.flag_bits & 0x1:
        raise PackageRejected(f"member {member.filename!r} is encrypted")
    # No entities resolved, no DTD loaded, nothing fetched; the scan refuses a DTD anyway. The
    # cast: the stubs' ParserTarget lists every optional callback, and lxml calls each one a
    # target defines, so the scan defines only those it needs.
    parser = None if scan is None else etree.XMLParser(
        target=cast("ParserTarget[None]", scan),
        resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False,
    )
    size = 0
    try:
        with archive.open(member) as stream:
            # zipfile returns at most the declared size, and checks the CRC at its end.
            while piece := stream.read(_READ_SIZE):
                size += len(piece)
                if parser is not None:
                    parser.feed(piece)
        if size != member.file_size:  # zipfile accepts a short member whose CRC matches
            raise PackageRejected(
                f"member {member.filename!r} does not match its declared size or checksum "
                f"({size:,} bytes, {member.file_size:,} declared)"
            )
        if parser is not None:
            parser.close()
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        # A CRC mismatch is how a member that lies about its size shows up.
        raise PackageRejected(
            f"member {member.filename!r} does not match its declared size or checksum ({exc})"
        ) from exc
    except NotImplementedError as exc:  # a compression method zipfile does not know
        raise PackageRejected(f"member {member.filename!r} cannot be read ({exc})") from exc
    except etree.XMLSyntaxError as exc:
        raise PackageRejected(f"member {member.filename!r} is not well-formed XML ({exc})") from exc


class _Totals:
    """What the XML scans of one package have counted so far, over all its parts."""

    def __init__(self, limits: ParseLimits, kind: str) -> None:
        self.limits = limits
        self.kind = kind
        self.elements = 0
        self.paragraphs = 0
        self.chars = 0


class _ContentTypes:
    """The Default (by extension) and Override (by part name) entries of [Content_Types].xml."""

    def __init__(self) -> None:
        self.defaults: dict[str, str] = {}
        self.overrides: dict[str, str] = {}

    def add(self, local_name: str, attrib: dict[str, str]) -> None:
        content_type = attrib.get("ContentType", "")
        if local_name == "Default" and "Extension" in attrib:
            self.defaults[attrib["Extension"].lower()] = content_type
        elif local_name == "Override" and "PartName" in attrib:
            self.overrides[attrib["PartName"].lower()] = content_type

    def is_parsed_as_xml(self, name: str) -> bool:
        """Whether python-docx would parse the member as XML (images never are)."""
        if name.lower().endswith(".rels"):
            return True
        extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        content_type = self.overrides.get("/" + name.lower(), self.defaults.get(extension, ""))
        return content_type.endswith("xml") and not content_type.startswith("image/")


class _XmlScan:
    """lxml parser target: counts what python-docx would build, builds nothing itself."""

    def __init__(
        self, totals: _Totals, member: str, content_types: _ContentTypes | None = None,
        count: bool = True,
    ) -> None:
        self._totals = totals
        self._member = member
        self._count = count
        self._content_types = content_types
        self._in_text: list[bool] = []  # per open element: is it a text run (w:t, a:t, m:t)

    def doctype(self, name: str | None, public_id: str | None, system_id: str | None) -> None:
        raise reject(
            f"{self._totals.kind} part {self._member!r} declares a DTD (<!DOCTYPE {name}>); "
            "Office XML parts may not, and entity expansion is refused"
        )

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        totals = self._totals
        limits = totals.limits
        self._in_text.append(tag.endswith("}t"))
        if len(self._in_text) > limits.max_xml_depth:
            raise reject(
                f"{totals.kind} part {self._member!r} nests XML elements more than "
                f"{limits.max_xml_depth:,} deep (RAGSIFT_MAX_XML_DEPTH)"
            )
        if not self._count:
            return
        totals.elements += 1
        if totals.elements > limits.max_xml_elements:
            raise reject(
                f"{totals.kind} has more than {limits.max_xml_elements:,} XML elements "
                "(RAGSIFT_MAX_XML_ELEMENTS)"
            )
        if tag == _PARAGRAPH:
            totals.paragraphs += 1
            if totals.paragraphs > limits.max_document_blocks:
                raise reject(
                    f"{totals.kind} has more than {limits.max_document_blocks:,} paragraphs "
                    "(RAGSIFT_MAX_DOCUMENT_BLOCKS)"
                )
        if self._content_types is not None:
            self._content_types.add(tag.rsplit("}", 1)[-1], attrib)

    def end(self, tag: str) -> None:
        self._in_text.pop()

    def data(self, data: str) -> None:
        if self._in_text and self._in_text[-1]:
            totals = self._totals
            totals.chars += len(data)
            if totals.chars > totals.limits.max_document_chars:
                raise reject(
                    f"{totals.kind} holds more than {totals.limits.max_document_chars:,} "
                    "characters of text (RAGSIFT_MAX_DOCUMENT_CHARS)"
                )

    def close(self) -> None:
        return None
