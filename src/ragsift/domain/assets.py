"""Images kept with a document (assets): their facts, and the reference a result carries.

The bytes live in the object store under `assets/{kb_id}/{sha256}` (one copy per KB however
many documents hold the image); a row per document and image holds what is known about it.
An asset lives as long as a stored chunk (of any retained KB version) names it.
"""

from __future__ import annotations

import hashlib

from pydantic import Field

from ragsift.domain.models import Frozen, Locator


def asset_id(kb_id: str, document_id: str, sha256: str) -> str:
    """Stable id of an image of a document: the same image re-parsed keeps its id."""
    key = f"asset:{kb_id}:{document_id}:{sha256}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def asset_object_key(kb_id: str, sha256: str) -> str:
    """Where an asset's bytes are in the object store."""
    return f"assets/{kb_id}/{sha256}"


class Asset(Frozen):
    """An image of a document: a picture in a PDF, DOCX or slide, or an image file itself."""

    id: str
    kb_id: str
    document_id: str
    sha256: str
    media_type: str
    width: int
    height: int
    locator: Locator = Field(default_factory=Locator)  # page or slide, and its box on the page
    caption: str = ""
    ocr_text: str = ""


class AssetRef(Frozen):
    """What a retrieval result tells of an asset of its chunk: enough to cite and show it."""

    id: str
    media_type: str
    width: int
    height: int
    caption: str = ""
    page: int | None = None
    slide: int | None = None

    @classmethod
    def of(cls, asset: Asset) -> AssetRef:
        return cls(
            id=asset.id, media_type=asset.media_type, width=asset.width, height=asset.height,
            caption=asset.caption, page=asset.locator.page, slide=asset.locator.slide,
        )
