"""The assets part of the Repository port: images of documents and the chunks naming them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import ColumnElement, delete, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from ragsift.adapters.sql.orm import (
    CHUNK_TABLE,
    AssetRow,
    DocumentRow,
    locator_from_json,
    locator_json,
)
from ragsift.domain.assets import Asset

_IN_BATCH = 500  # bound variables per IN list, as in repository.py


def _asset(row: AssetRow) -> Asset:
    return Asset(
        id=row.id, kb_id=row.kb_id, document_id=row.document_id, sha256=row.sha256,
        media_type=row.media_type, width=row.width, height=row.height,
        locator=locator_from_json(dict(row.locator)), caption=row.caption,
        ocr_text=row.ocr_text,
    )


def _named(session: Session, chunks: ColumnElement[bool]) -> set[str]:
    """The asset ids the stored chunks selected by `chunks` name."""
    query = select(CHUNK_TABLE.c.asset_ids).where(chunks, CHUNK_TABLE.c.asset_ids.is_not(None))
    return {asset for (ids,) in session.execute(query) for asset in ids or ()}


class AssetRepositoryMixin:
    """Mixed into SqlRepository, which sets `_sessions`."""

    _sessions: sessionmaker[Session]

    def save_assets(self, document_id: str, assets: Sequence[Asset]) -> None:
        """Insert or update the document's assets (by id); others of it are left as they are."""
        if not assets:
            return
        with self._sessions.begin() as session:
            for asset in assets:
                session.merge(AssetRow(
                    id=asset.id, kb_id=asset.kb_id, document_id=document_id,
                    sha256=asset.sha256, media_type=asset.media_type, width=asset.width,
                    height=asset.height, locator=locator_json(asset.locator),
                    caption=asset.caption, ocr_text=asset.ocr_text,
                ))

    def get_asset(self, asset_id: str) -> Asset | None:
        with self._sessions.begin() as session:
            row = session.get(AssetRow, asset_id)
            return None if row is None else _asset(row)

    def get_assets(self, asset_ids: Iterable[str]) -> dict[str, Asset]:
        """The assets of these ids that exist, by id (one query per 500 ids)."""
        ids = sorted(set(asset_ids))
        found: dict[str, Asset] = {}
        with self._sessions.begin() as session:
            for start in range(0, len(ids), _IN_BATCH):
                query = select(AssetRow).where(AssetRow.id.in_(ids[start:start + _IN_BATCH]))
                found.update((row.id, _asset(row)) for row in session.scalars(query))
        return found

    def document_assets(self, document_id: str) -> list[Asset]:
        with self._sessions.begin() as session:
            query = select(AssetRow).where(AssetRow.document_id == document_id)
            return [_asset(row) for row in session.scalars(query.order_by(AssetRow.id))]

    def collect_assets(self, document_id: str) -> list[tuple[str, str]]:
        """Delete the document's assets no stored chunk names any more.

        Returns (kb_id, sha256) of the images no asset row of their KB holds after that: their
        bytes may go. A document already deleted has no asset rows left (cascade); pass its
        former assets to `unused_images` instead.
        """
        with self._sessions.begin() as session:
            named = _named(session, CHUNK_TABLE.c.document_id == document_id)
            rows = session.scalars(select(AssetRow).where(AssetRow.document_id == document_id))
            gone = [row for row in rows if row.id not in named]
            if not gone:
                return []
            session.execute(delete(AssetRow).where(AssetRow.id.in_([row.id for row in gone])))
            images = {(row.kb_id, row.sha256) for row in gone}
        return self.unused_images(images)

    def unused_images(self, images: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Those (kb_id, sha256) that no asset row of the KB holds."""
        unused: list[tuple[str, str]] = []
        with self._sessions.begin() as session:
            for kb_id, sha256 in sorted(set(images)):
                held = session.scalar(select(func.count()).select_from(AssetRow).where(
                    AssetRow.kb_id == kb_id, AssetRow.sha256 == sha256))
                if not held:
                    unused.append((kb_id, sha256))
        return unused

    def kb_images(self, kb_id: str) -> set[tuple[str, str]]:
        """(kb_id, sha256) of every image the KB's asset rows hold."""
        with self._sessions.begin() as session:
            query = select(AssetRow.sha256).where(AssetRow.kb_id == kb_id).distinct()
            return {(kb_id, sha256) for sha256 in session.scalars(query)}

    def sweep_assets(self, kb_id: str) -> int:
        """Delete the KB's asset rows no stored chunk of the KB names; how many went."""
        with self._sessions.begin() as session:
            named = _named(session, CHUNK_TABLE.c.kb_id == kb_id)
            rows = session.scalars(select(AssetRow.id).where(AssetRow.kb_id == kb_id)).all()
            gone = [row for row in rows if row not in named]
            for start in range(0, len(gone), _IN_BATCH):
                session.execute(delete(AssetRow).where(
                    AssetRow.id.in_(gone[start:start + _IN_BATCH])))
            return len(gone)

    def set_warnings(self, document_id: str, warnings: Sequence[str]) -> None:
        """Record what parsing skipped or cut (an empty list clears it)."""
        with self._sessions.begin() as session:
            session.execute(
                update(DocumentRow).where(DocumentRow.id == document_id)
                .values(warnings=list(warnings) or None)
            )
