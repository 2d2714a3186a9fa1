"""Images kept with documents and rendered PDF pages over HTTP, on the real stack (e5, tantivy,
SQLite): a .docx with a picture and a reportlab PDF are ingested through the API."""

from __future__ import annotations

import hashlib
import io
from typing import Any

from PIL import Image

from api.api_helpers import Api, assert_error
from api.auth_helpers import as_key, new_key
from api.conftest import ApiFactory
from ragsift.auth.keys import Role
from ragsift.domain.assets import asset_object_key


def picture_png(colour: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (240, 160), colour).save(out, "PNG")
    return out.getvalue()


def diagram_docx(png: bytes) -> bytes:
    import docx
    from docx.shared import Inches

    document = docx.Document()
    document.add_heading("Office network", 1)
    document.add_paragraph("The office network diagram shows the firewall and the VPN gateway.")
    document.add_picture(io.BytesIO(png), width=Inches(2))
    document.add_heading("Printers", 1)
    document.add_paragraph("Printers are on the third floor next to the kitchen.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def two_page_pdf() -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    for page in (1, 2):
        pdf.setFont("Helvetica", 12)
        pdf.drawString(72, 760, f"Page {page}: the VPN gateway accepts connections on port 443.")
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def only_asset(api: Api, document_id: str) -> dict[str, Any]:
    response = api.client.get(f"/api/documents/{document_id}/assets")
    assert response.status_code == 200, response.text
    [asset] = response.json()
    return asset  # type: ignore[no-any-return]


def test_a_docx_picture_is_listed_and_served_with_its_type_and_nosniff(api: Api) -> None:
    png = picture_png()
    kb_id = api.create_kb()
    [document_id] = api.ingest(kb_id, {"network.docx": diagram_docx(png)})
    asset = only_asset(api, document_id)
    assert (asset["media_type"], asset["width"], asset["height"]) == ("image/png", 240, 160)
    assert asset["sha256"] == hashlib.sha256(png).hexdigest()
    assert asset["caption"] == "Office network"  # no alt text: the nearest heading
    response = api.client.get(f"/api/assets/{asset['id']}")
    assert response.status_code == 200
    assert response.content == png
    assert response.headers["content-type"] == "image/png"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "immutable" in response.headers["cache-control"]


def test_search_hits_carry_the_assets_of_their_chunk(api: Api) -> None:
    kb_id = api.create_kb()
    [document_id] = api.ingest(kb_id, {"network.docx": diagram_docx(picture_png())})
    asset = only_asset(api, document_id)
    hits = api.search(kb_id, "office network diagram firewall", mode="sparse", top_k=5)
    network = next(h for h in hits if "firewall" in h["text"])
    assert [a["id"] for a in network["assets"]] == [asset["id"]]
    printers = [h for h in hits if "Printers" in h["text"] and "firewall" not in h["text"]]
    assert all(h["assets"] == [] for h in printers)


def test_an_unknown_asset_is_404(api: Api) -> None:
    assert_error(api.client.get("/api/assets/0123456789abcdef0123456789abcdef"), 404,
                 "not_found")


def test_deleting_the_document_removes_its_assets_and_their_bytes(api: Api) -> None:
    kb_id = api.create_kb()
    [document_id] = api.ingest(kb_id, {"network.docx": diagram_docx(picture_png())})
    asset = only_asset(api, document_id)
    objects = api.container.settings.data_dir / "objects"
    stored = objects / asset_object_key(kb_id, asset["sha256"])
    assert stored.exists()
    assert api.client.delete(f"/api/documents/{document_id}").status_code == 204
    assert_error(api.client.get(f"/api/assets/{asset['id']}"), 404, "not_found")
    assert not stored.exists()


def test_an_image_shared_by_two_documents_is_stored_once_and_outlives_one_of_them(
    api: Api,
) -> None:
    png = picture_png()
    kb_id = api.create_kb()
    [first] = api.ingest(kb_id, {"a.docx": diagram_docx(png)})
    [second] = api.ingest(kb_id, {"b.docx": _other_text_docx(png)})
    one, two = only_asset(api, first), only_asset(api, second)
    assert one["id"] != two["id"] and one["sha256"] == two["sha256"]
    assert api.client.delete(f"/api/documents/{first}").status_code == 204
    response = api.client.get(f"/api/assets/{two['id']}")
    assert response.status_code == 200 and response.content == png


def _other_text_docx(png: bytes) -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("A second handbook shows the same network picture.")
    document.add_picture(io.BytesIO(png))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_reindex_backfills_the_assets_of_a_document_ingested_before_them(api: Api) -> None:
    kb_id = api.create_kb()
    [document_id] = api.ingest(kb_id, {"network.docx": diagram_docx(picture_png())})
    repository = api.container.repository
    before = {c.id for c in repository.list_chunks(document_id) if not c.asset_ids}
    _forget_assets(api, document_id)  # as a database from before assets holds it
    assert api.client.get(f"/api/documents/{document_id}/assets").json() == []
    response = api.client.post(f"/api/documents/{document_id}/reindex")
    assert response.status_code == 202, response.text
    assert api.wait_settled(document_id)["status"] == "READY"
    asset = only_asset(api, document_id)
    chunks = [c for c in repository.list_chunks(document_id) if c.valid_to_seq == 0]
    assert any(asset["id"] in c.asset_ids for c in chunks)
    # chunks whose text and images did not change keep their ids
    assert before <= {c.id for c in chunks}


def _forget_assets(api: Api, document_id: str) -> None:
    import sqlalchemy as sa

    from ragsift.adapters.sql.orm import AssetRow, ChunkRow

    engine = sa.create_engine(api.container.settings.resolved_database_url)
    with engine.begin() as connection:
        connection.execute(sa.update(ChunkRow).where(ChunkRow.document_id == document_id)
                           .values(asset_ids=None))
        connection.execute(sa.delete(AssetRow).where(AssetRow.document_id == document_id))
    engine.dispose()


def test_a_pdf_page_renders_at_the_width_asked_with_its_size_in_points(api: Api) -> None:
    kb_id = api.create_kb()
    [document_id] = api.ingest(kb_id, {"vpn.pdf": two_page_pdf()})
    response = api.client.get(f"/api/documents/{document_id}/pages/2.png?width=300")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/png"
    assert response.headers["x-page-size"] == "595.276x841.89"
    assert Image.open(io.BytesIO(response.content)).width == 300
    again = api.client.get(f"/api/documents/{document_id}/pages/2.png?width=300")
    assert again.content == response.content  # from the cache


def test_page_requests_that_cannot_be_served_say_why(api: Api) -> None:
    kb_id = api.create_kb()
    [pdf_id] = api.ingest(kb_id, {"vpn.pdf": two_page_pdf()})
    [docx_id] = api.ingest(kb_id, {"network.docx": diagram_docx(picture_png())})
    assert_error(api.client.get(f"/api/documents/{pdf_id}/pages/3.png"), 404, "page_unavailable")
    assert_error(api.client.get(f"/api/documents/{pdf_id}/pages/x.png"), 422, "invalid_request")
    assert_error(api.client.get(f"/api/documents/{pdf_id}/pages/1.png?width=99999"), 422,
                 "invalid_request")
    assert_error(api.client.get(f"/api/documents/{docx_id}/pages/1.png"), 409, "not_a_pdf")


def test_a_key_of_another_kb_cannot_read_an_asset(make_api: ApiFactory) -> None:
    api = make_api(auth=True)
    admin = new_key(api, "admin", Role.ADMIN)
    kb = as_key(api, admin, "POST", "/api/kbs", json={"name": "docs"}).json()["id"]
    other = as_key(api, admin, "POST", "/api/kbs", json={"name": "other"}).json()["id"]
    parts = [("files", ("network.docx", diagram_docx(picture_png()), "application/octet-stream"))]
    response = as_key(api, admin, "POST", f"/api/kbs/{kb}/documents", files=parts)
    [document_id] = [d["id"] for d in response.json()["documents"]]
    _wait_ready(api, admin, document_id)
    [asset] = as_key(api, admin, "GET", f"/api/documents/{document_id}/assets").json()
    outsider = new_key(api, "outsider", Role.READER, kb_ids=(other,))
    insider = new_key(api, "insider", Role.READER, kb_ids=(kb,))
    assert as_key(api, outsider, "GET", f"/api/assets/{asset['id']}").status_code in (403, 404)
    assert as_key(api, insider, "GET", f"/api/assets/{asset['id']}").status_code == 200


def _wait_ready(api: Api, key: str, document_id: str) -> None:
    import time

    deadline = time.monotonic() + 30
    while as_key(api, key, "GET", f"/api/documents/{document_id}").json()["status"] != "READY":
        assert time.monotonic() < deadline
        time.sleep(0.05)
