"""A document's images: linked to the chunks they belong with, stored, and collected.

Linking: an image the parser placed in a block goes with the children holding that block; one
placed only in a section goes with the child of that section nearest to it on the page (by
the vertical distance between its box and the child's line boxes), else the section's first
child; one placed nowhere goes with the first child on its page or slide, else the document's
first child. A parent names every asset of its children, so a Small2Big context shows them.

Storage: bytes in the object store once per KB and sha256 (asset_object_key), a row per
document and image in the facts. Rows are written before the chunks naming them (a crash in
between leaves rows that the next write of the document replaces); after every write or
deletion, the document's rows no stored chunk names are collected, then bytes no row holds.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from ragsift.domain.assets import Asset, asset_id, asset_object_key
from ragsift.domain.models import CHILD_LEVEL, Box, Chunk, Document, Locator
from ragsift.ingestion.chunking import ChildOrigin, ChunkedDocument
from ragsift.ingestion.parsers.base import ParsedAsset, ParsedDocument
from ragsift.ports import ObjectStore, Repository

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StagedAsset:
    """An asset of a prepared document and its bytes, not yet stored."""

    asset: Asset
    data: bytes


def attach_assets(
    kb_id: str, document_id: str, filename: str, parsed: ParsedDocument,
    chunked: ChunkedDocument,
) -> tuple[list[Chunk], list[StagedAsset]]:
    """The chunks naming their assets, and the assets to store (one per distinct image)."""
    if not parsed.assets or not chunked.origins:
        return chunked.chunks, []
    named: dict[str, list[str]] = {}
    staged: dict[str, StagedAsset] = {}
    for parsed_asset in parsed.assets:
        sha256 = hashlib.sha256(parsed_asset.data).hexdigest()
        identifier = asset_id(kb_id, document_id, sha256)
        origins = _linked(parsed_asset, chunked.origins)
        if identifier not in staged:
            caption = parsed_asset.caption or _caption(origins[0], chunked.chunks, filename)
            asset = Asset(
                id=identifier, kb_id=kb_id, document_id=document_id, sha256=sha256,
                media_type=parsed_asset.media_type, width=parsed_asset.width,
                height=parsed_asset.height, locator=parsed_asset.locator, caption=caption,
                ocr_text=parsed_asset.ocr_text,
            )
            staged[identifier] = StagedAsset(asset, parsed_asset.data)
        for origin in origins:
            ids = named.setdefault(origin.chunk_id, [])
            if identifier not in ids:
                ids.append(identifier)
    by_parent: dict[str, list[str]] = {}
    for chunk in chunked.chunks:
        if chunk.level == CHILD_LEVEL and chunk.parent_id and chunk.id in named:
            parent_ids = by_parent.setdefault(chunk.parent_id, [])
            parent_ids.extend(i for i in named[chunk.id] if i not in parent_ids)
    named.update(by_parent)
    chunks = [
        chunk.model_copy(update={"asset_ids": tuple(named[chunk.id])}) if chunk.id in named
        else chunk
        for chunk in chunked.chunks
    ]
    return chunks, list(staged.values())


def _caption(origin: ChildOrigin, chunks: Sequence[Chunk], filename: str) -> str:
    """Without a caption of its own: the nearest heading, else the file name."""
    for chunk in chunks:
        if chunk.id == origin.chunk_id and chunk.heading_path:
            return chunk.heading_path[-1]
    return filename.replace("\\", "/").rsplit("/", 1)[-1]


def _linked(asset: ParsedAsset, origins: Sequence[ChildOrigin]) -> list[ChildOrigin]:
    if asset.section is not None:
        in_section = [o for o in origins if o.section == asset.section]
        if in_section and asset.block is not None:
            holding = [o for o in in_section if asset.block in o.blocks]
            if holding:
                return holding
        if in_section:
            return [_nearest(asset.locator, in_section)]
    same_place = [o for o in origins if _same_place(asset.locator, o.locator)]
    if same_place:
        return [_nearest(asset.locator, same_place)]
    return [origins[0]]


def _same_place(asset: Locator, chunk: Locator) -> bool:
    if asset.page is not None:
        return chunk.page == asset.page
    return asset.slide is not None and chunk.slide == asset.slide


def _nearest(locator: Locator, origins: Sequence[ChildOrigin]) -> ChildOrigin:
    if not locator.boxes:
        return origins[0]
    target = locator.boxes[0]
    return min(origins, key=lambda origin: _distance(target, origin.locator.boxes))


def _distance(box: Box, boxes: Sequence[Box]) -> float:
    """Vertical gap between a box and the closest of some boxes (0 when they overlap)."""
    if not boxes:
        return float("inf")
    return min(max(0.0, other[1] - box[3], box[1] - other[3]) for other in boxes)


class AssetKeeper:
    """Stores the assets of prepared documents and collects those no chunk names."""

    def __init__(self, facts: Repository, objects: ObjectStore) -> None:
        self._facts = facts
        self._objects = objects

    def stage(self, document: Document, assets: Sequence[StagedAsset],
              warnings: Sequence[str]) -> None:
        """Put the bytes and the rows of a document's assets, and record its warnings."""
        for staged in assets:
            self._objects.put(asset_object_key(document.kb_id, staged.asset.sha256), staged.data)
        self._facts.save_assets(document.id, [staged.asset for staged in assets])
        self._facts.set_warnings(document.id, warnings)

    def collect(self, document_id: str) -> None:
        """Drop the document's assets no stored chunk names, then their unused bytes."""
        try:
            self._delete_bytes(self._facts.collect_assets(document_id))
        except Exception:  # a leftover asset costs space, never correctness
            logger.exception("collecting the assets of %s failed", document_id)

    def before_delete(self, document_id: str) -> list[tuple[str, str]]:
        """The images of a document about to be deleted (pass them to after_delete)."""
        return [(asset.kb_id, asset.sha256) for asset in self._facts.document_assets(document_id)]

    def after_delete(self, images: Sequence[tuple[str, str]]) -> None:
        try:
            self._delete_bytes(self._facts.unused_images(images))
        except Exception:
            logger.exception("removing the bytes of %d deleted assets failed", len(images))

    def _delete_bytes(self, images: Sequence[tuple[str, str]]) -> None:
        for kb_id, sha256 in images:
            self._objects.delete_prefix(asset_object_key(kb_id, sha256))
