"""The pages and every static asset are served from the package with the right content type."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ragsift.api import create_app
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.ingestion.parsers import SUPPORTED_EXTENSIONS
from ragsift.web.routes import (
    CONTENT_SECURITY_POLICY,
    PAGES_DIR,
    STATIC_DIR,
    render_page,
    static_assets,
)
from web.web_helpers import REPO_ROOT

EXPECTED_ASSETS = {
    "app.css", "js/api.js", "js/auth.js", "js/chat.js", "js/chunks.js", "js/conversations.js",
    "js/debug.js", "js/dialog.js", "js/docpicker.js", "js/documents.js", "js/dom.js",
    "js/evidence.js", "js/faq.js", "js/faqapi.js", "js/format.js", "js/kbs.js",
    "js/markdown.js", "js/sse.js", "js/trace.js", "js/turn.js", "js/turntools.js",
    "js/upload.js",
    "js/assets.js", "js/chatcards.js", "js/i18n.js", "js/langswitch.js",
    "js/strings/chat.js", "js/strings/common.js", "js/strings/debug.js",
    "js/strings/documents.js", "js/strings/panel.js",
    "js/settings.js", "js/strings/settings.js",  # per-KB settings (issue 38)
    "js/filtereditor.js", "js/strings/filter.js", "js/metadialog.js",  # metadata (issue 36)
    "js/compare.js", "js/testing.js", "js/evalview.js",  # retrieval testing (issue 38)
    "js/rerun.js", "js/kbdefaults.js", "js/labelsets.js",  # its re-run, KB defaults, sets
    "js/chatoptions.js", "js/chatstored.js", "js/chunkcounts.js",  # split pages (issue 40)
    "vendor/marked.esm.js", "vendor/purify.min.js",
    "vendor/LICENSE-marked.txt", "vendor/LICENSE-dompurify.txt",
    "vendor/LICENSE-dompurify-MPL.txt",
}
TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".txt": "text/plain; charset=utf-8"}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    container = build(Settings(data_dir=tmp_path_factory.mktemp("web") / "data"))
    try:
        with TestClient(create_app(container)) as client:
            yield client
    finally:
        container.close()


def test_static_assets_are_exactly_the_shipped_files() -> None:
    assert set(static_assets()) == EXPECTED_ASSETS


def test_static_assets_skip_unknown_types_and_directories(tmp_path: Path) -> None:
    (tmp_path / "js").mkdir()
    (tmp_path / "js" / "a.js").write_text("export {};")
    (tmp_path / "notes.md").write_text("# not served")
    (tmp_path / "run.py").write_text("")

    assert static_assets(tmp_path) == {
        "js/a.js": (tmp_path / "js" / "a.js", "text/javascript; charset=utf-8")
    }


PAGE_NAMES = ["debug", "chat", "documents", "faq", "settings"]


@pytest.mark.parametrize("page", PAGE_NAMES)
def test_pages_are_html_with_a_strict_content_security_policy(
    client: TestClient, page: str
) -> None:
    response = client.get(f"/web/{page}")

    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'self';" in CONTENT_SECURITY_POLICY
    assert response.headers["x-content-type-options"] == "nosniff"
    html = (PAGES_DIR / f"{page}.html").read_text(encoding="utf-8")
    assert response.text == render_page(html, api_docs=False)


@pytest.mark.parametrize("asset", sorted(EXPECTED_ASSETS))
def test_each_asset_is_served_with_its_content_type(client: TestClient, asset: str) -> None:
    response = client.get(f"/web/static/{asset}")

    assert response.status_code == 200
    assert response.headers["content-type"] == TYPES[Path(asset).suffix]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.content == (STATIC_DIR / asset).read_bytes()


@pytest.mark.parametrize("path", ["/", "/web", "/web/"])
def test_root_and_web_redirect_to_the_debug_page(client: TestClient, path: str) -> None:
    response = client.get(path, follow_redirects=False)

    assert response.status_code == 307
    assert response.headers["location"] == "/web/debug"


@pytest.mark.parametrize("path", [
    "/web/admin", "/web/static/nope.js", "/web/static/vendor/README.md",
    "/web/static/../routes.py", "/web/static/%2e%2e/routes.py", "/web/static/js",
])
def test_anything_else_is_a_json_404(client: TestClient, path: str) -> None:
    response = client.get(path)

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_web_routes_stay_out_of_the_openapi_document(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]

    assert [path for path in paths if path == "/" or path.startswith("/web")] == []


def test_every_script_and_stylesheet_a_page_names_is_served() -> None:
    assets = static_assets()
    for page in (f"{name}.html" for name in PAGE_NAMES):
        html = (PAGES_DIR / page).read_text(encoding="utf-8")
        referenced = re.findall(r'(?:src|href)="/web/static/([^"]+)"', html)
        assert referenced, page
        assert [name for name in referenced if name not in assets] == [], page


def test_every_page_links_to_every_other_page() -> None:
    for name in PAGE_NAMES:
        html = (PAGES_DIR / f"{name}.html").read_text(encoding="utf-8")
        links = set(re.findall(r'<a href="/web/([a-z]+)"', html))
        assert links == set(PAGE_NAMES), name
        assert re.findall(r'href="/web/([a-z]+)"[^>]*aria-current="page"', html) == [name]


def test_pages_have_no_inline_script_or_style() -> None:
    for name in PAGE_NAMES:
        html = (PAGES_DIR / f"{name}.html").read_text(encoding="utf-8")
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == [], name
        assert "<style" not in html and " style=" not in html, name
        assert re.findall(r"\son[a-z]+=", html) == [], name  # no inline event handlers


def test_every_module_import_resolves_to_a_served_file() -> None:
    assets = static_assets()
    for name in (n for n in assets if n.startswith("js/")):
        source = (STATIC_DIR / name).read_text(encoding="utf-8")
        for target in re.findall(r'from\s+"(\.{1,2}/[^"]+)"', source):
            # relative to the importing module's folder (js/ or js/strings/)
            folder = Path("/") / Path(name).parent
            resolved = (folder / target).resolve().relative_to("/").as_posix()
            assert resolved in assets, f"{name} imports {target}"


def test_vendored_libraries_are_the_versions_the_readme_names() -> None:
    vendor = STATIC_DIR / "vendor"
    readme = (vendor / "README.md").read_text(encoding="utf-8")

    assert (vendor / "marked.esm.js").read_text(encoding="utf-8").startswith(
        "/**\n * marked v18.2.1 - a markdown parser")
    assert "@license DOMPurify 3.5.0 " in (vendor / "purify.min.js").read_text(encoding="utf-8")
    assert "| 18.2.1 |" in readme and "| 3.5.0 |" in readme


# ---------- issue 38: one list of accepted types; an API link that is served ----------

def _accept(html: str) -> list[str]:
    return [re.search(r'accept="([^"]*)"', tag).group(1)  # type: ignore[union-attr]
            for tag in re.findall(r'<input id="upload-files"[^>]*>', html, re.S)]


@pytest.mark.parametrize("page", ["documents", "debug"])
def test_the_upload_picker_accepts_exactly_what_the_parser_registry_parses(
    client: TestClient, page: str
) -> None:
    html = client.get(f"/web/{page}").text

    assert _accept(html) == [",".join(sorted(SUPPORTED_EXTENSIONS))]
    assert {".xlsx", ".pptx", ".csv", ".json", ".png", ".jpg"} <= set(_accept(html)[0].split(","))
    assert " ".join(sorted(SUPPORTED_EXTENSIONS)) in html  # the list shown beside the picker
    assert "{{" not in html  # every placeholder filled


def test_an_unsupported_upload_is_refused_naming_the_same_list(client: TestClient) -> None:
    kb_id = client.post("/api/kbs", json={"name": "types"}).json()["id"]

    response = client.post(f"/api/kbs/{kb_id}/documents",
                           files={"files": ("notes.rtf", b"{\\rtf1 hi}", "text/rtf")})

    assert response.status_code == 415
    assert response.json()["message"].endswith(
        "supported: " + ", ".join(sorted(SUPPORTED_EXTENSIONS)))


def test_the_api_link_of_every_page_points_at_a_served_document(client: TestClient) -> None:
    """Swagger UI (/docs) is served only with RAGSIFT_API_DOCS=true; else the link is the
    OpenAPI document, which always is."""
    for name in PAGE_NAMES:
        html = client.get(f"/web/{name}").text
        [target] = re.findall(r'<a href="([^"]+)" data-i18n="common.nav.api"', html)
        assert target == "/openapi.json", name
        assert client.get(target).status_code == 200
        source = (PAGES_DIR / f"{name}.html").read_text(encoding="utf-8")
        assert 'href="/docs" data-i18n="common.nav.api"' in render_page(source, api_docs=True)


def test_the_file_formats_page_lists_the_accepted_types_of_the_parser_registry() -> None:
    page = (REPO_ROOT / "docs" / "how-to" / "file-formats.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- accepted-types -->(.*?)<!-- /accepted-types -->", page, re.S)
    assert match, "docs/how-to/file-formats.md: no accepted-types list"
    assert re.findall(r"`(\.[a-z]+)`", match.group(1)) == sorted(SUPPORTED_EXTENSIONS)
