"""Serve the pages and their static assets from the package (no build step, no CDN).

Assets are served from a whitelist built at start-up, each with an explicit content type:
module scripts must be `text/javascript` whatever the host's mimetypes table says, and a path
that is not a shipped file (`..`, a directory, an unknown extension) is simply a 404.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse, RedirectResponse, Response

from ragsift.api.errors import ApiError
from ragsift.ingestion.parsers import SUPPORTED_EXTENSIONS

WEB_DIR = Path(__file__).parent
PAGES_DIR = WEB_DIR / "pages"
STATIC_DIR = WEB_DIR / "static"

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}
PAGES = {"debug": "debug.html", "chat": "chat.html", "documents": "documents.html",
         "faq": "faq.html", "settings": "settings.html"}

# Defence in depth: rendered Markdown is sanitised by DOMPurify, and even if something slipped
# through, no inline or foreign script, style, frame or image source would run or load.
# blob: images are the page's own: assets and PDF pages fetched with the API key (assets.js).
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_COMMON_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"}
_PAGE_HEADERS = {**_COMMON_HEADERS, "Content-Security-Policy": CONTENT_SECURITY_POLICY,
                 "Referrer-Policy": "no-referrer"}


def static_assets(root: Path = STATIC_DIR) -> dict[str, tuple[Path, str]]:
    """URL path below /web/static/ -> (file, content type), for every servable file under root."""
    assets: dict[str, tuple[Path, str]] = {}
    for path in sorted(root.rglob("*")):
        content_type = CONTENT_TYPES.get(path.suffix)
        if path.is_file() and content_type is not None:
            assets[path.relative_to(root).as_posix()] = (path, content_type)
    return assets


def accepted_extensions() -> list[str]:
    """The file types an upload may carry, from the parser registry (sorted, with the dot)."""
    return sorted(SUPPORTED_EXTENSIONS)


def render_page(html: str, api_docs: bool) -> str:
    """A page as served: the upload inputs accept what the parsers parse (one list, the
    registry's), and the header's API link points at what this server serves (Swagger UI only
    with RAGSIFT_API_DOCS=true; /openapi.json always)."""
    accept = ",".join(accepted_extensions())
    html = html.replace('accept="' + ACCEPT_PLACEHOLDER + '"', f'accept="{accept}"')
    html = html.replace(TYPES_PLACEHOLDER, " ".join(accepted_extensions()))
    if not api_docs:
        html = html.replace('<a href="/docs"', '<a href="/openapi.json"')
    return html


# in the pages' source: replaced when served (render_page)
ACCEPT_PLACEHOLDER = "{{accepted}}"
TYPES_PLACEHOLDER = "{{accepted-list}}"


def build_router(assets: dict[str, tuple[Path, str]], api_docs: bool = False) -> APIRouter:
    """The page, redirect and asset routes (kept out of the OpenAPI document)."""
    router = APIRouter(include_in_schema=False)
    pages = {name: render_page((PAGES_DIR / filename).read_text(encoding="utf-8"), api_docs)
             for name, filename in PAGES.items()}

    @router.get("/")
    def root() -> RedirectResponse:
        return RedirectResponse("/web/debug", status_code=307)

    @router.get("/web")
    @router.get("/web/")
    def web_root() -> RedirectResponse:
        return RedirectResponse("/web/debug", status_code=307)

    @router.get("/web/{page}")
    def page(page: str) -> Response:
        html = pages.get(page)
        if html is None:
            raise ApiError(404, "not_found", f"no page {page!r}; try /web/debug, /web/chat, "
                           "/web/documents, /web/faq or /web/settings")
        return Response(html, media_type=CONTENT_TYPES[".html"], headers=_PAGE_HEADERS)

    @router.get("/web/static/{asset:path}")
    def static(asset: str) -> FileResponse:
        found = assets.get(asset)
        if found is None:
            raise ApiError(404, "not_found", f"no static file {asset!r}")
        path, content_type = found
        return FileResponse(path, media_type=content_type, headers=_COMMON_HEADERS)

    return router


def install_web(app: FastAPI, api_docs: bool = False) -> None:
    """Register the web pages on `app`: / and /web redirect to /web/debug."""
    app.include_router(build_router(static_assets(), api_docs))
