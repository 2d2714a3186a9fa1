"""Images kept with documents (assets) and rendered PDF pages, for citations and previews.

Both are served with their exact type, `X-Content-Type-Options: nosniff` and a CSP that lets
nothing in them run; an asset's bytes never change for its id (the id derives from them), so
it may be cached for a long time. Access follows the document: a key that cannot see the
document gets 404 for its assets and pages as for the document itself.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Annotated

from fastapi import APIRouter, Query, Response
from starlette.concurrency import run_in_threadpool

from ragsift.adapters.local_object_store import LocalObjectStore
from ragsift.api.deps import State, require_document
from ragsift.api.errors import ERROR_RESPONSES, ApiError
from ragsift.bootstrap import Container
from ragsift.domain.assets import Asset
from ragsift.domain.errors import DocumentRejected, NotFound
from ragsift.ingestion.parsers import ParseLimits

router = APIRouter(tags=["assets"], responses=ERROR_RESPONSES)
logger = logging.getLogger(__name__)

# what a browser may display inline; anything else is sent as a download
_INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
}
_IMMUTABLE = "private, max-age=31536000, immutable"
_PDF = "application/pdf"


def require_asset(container: Container, asset_id: str) -> Asset:
    asset = container.repository.get_asset(asset_id)
    if asset is None:
        raise NotFound(f"asset {asset_id!r} does not exist")
    return asset


@router.get("/api/assets/{asset_id}", response_class=Response,
            responses={200: {"content": {"image/png": {}, "image/jpeg": {}}}})
def get_asset(asset_id: str, state: State) -> Response:
    """The bytes of an image of a document, as stored."""
    asset = require_asset(state.container, asset_id)
    try:
        data = state.container.ingestion.read_asset(asset)
    except NotFound as exc:
        raise NotFound(f"asset {asset_id!r} has no stored bytes") from exc
    headers = {**_HEADERS, "Cache-Control": _IMMUTABLE, "ETag": f'"{asset.sha256}"'}
    media_type = asset.media_type
    if media_type not in _INLINE_TYPES:
        media_type = "application/octet-stream"
        headers["Content-Disposition"] = "attachment"
    return Response(data, media_type=media_type, headers=headers)


@router.get("/api/documents/{document_id}/assets")
def list_assets(document_id: str, state: State) -> list[Asset]:
    """The images kept with a document (its pictures, or the image file itself)."""
    require_document(state.container, document_id)
    return state.container.repository.document_assets(document_id)


@router.get("/api/documents/{document_id}/pages/{page}.png", response_class=Response,
            responses={200: {"content": {"image/png": {}}}})
async def get_page(
    document_id: str, page: str, state: State,
    width: Annotated[int, Query(ge=64, description="pixels [800]")] = 800,
) -> Response:
    """A page of a PDF document rendered as PNG, `width` pixels wide (cached)."""
    if not page.isdigit() or int(page) < 1:
        raise ApiError(422, "invalid_request", f"page must be a number from 1, not {page!r}")
    settings = state.container.settings
    if width > settings.page_preview_max_width:
        raise ApiError(422, "invalid_request", f"width {width} is over the limit of "
                       f"{settings.page_preview_max_width} (RAGSIFT_PAGE_PREVIEW_MAX_WIDTH)")
    data, size = await run_in_threadpool(
        _rendered, state.container, document_id, int(page), width)
    # the page's size in PDF points: chunk boxes (points, top-left origin) scale by
    # image width / page width onto the image
    return Response(data, media_type="image/png", headers={
        **_HEADERS, "Cache-Control": "private, max-age=3600",
        "X-Page-Size": f"{size[0]:g}x{size[1]:g}"})


def _rendered(
    container: Container, document_id: str, page: int, width: int
) -> tuple[bytes, tuple[float, float]]:
    document = require_document(container, document_id)
    if document.media_type != _PDF:
        raise ApiError(409, "not_a_pdf", f"document {document_id!r} is {document.media_type}; "
                       "only PDF pages can be rendered")
    key = hashlib.sha256(f"{document.sha256}:{page}:{width}".encode()).hexdigest()[:32]
    # the local object store writes whole files or none, even when the process dies
    cache = LocalObjectStore(container.settings.data_dir / "cache" / "pages")
    try:
        width_pt, _, height_pt = cache.get(f"{document_id}/{key}.size").decode().partition("x")
        return cache.get(f"{document_id}/{key}.png"), (float(width_pt), float(height_pt))
    except NotFound:
        pass
    from ragsift.ingestion.parsers.pdf_pages import render_preview

    original = container.ingestion.read_original(document)
    try:
        data, size = render_preview(original, page, width, ParseLimits.from_settings(
            container.settings))
    except DocumentRejected as exc:
        raise ApiError(404 if "does not exist" in str(exc) else 422, "page_unavailable",
                       str(exc)) from exc
    try:
        cache.put(f"{document_id}/{key}.size", f"{size[0]:g}x{size[1]:g}".encode())
        cache.put(f"{document_id}/{key}.png", data)
    except OSError:
        logger.warning("could not cache page %d of %s", page, document_id, exc_info=True)
    return data, size
