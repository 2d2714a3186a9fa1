from sql_factories import make_chunks, make_document, make_kb

from ragsift.adapters.sql import SqlRepository
from ragsift.domain.assets import Asset, asset_id
from ragsift.domain.models import DocumentStatus, Locator


def make_asset(doc_id: str, sha: str, kb_id: str = "kb1", caption: str = "Figure") -> Asset:
    return Asset(
        id=asset_id(kb_id, doc_id, sha), kb_id=kb_id, document_id=doc_id, sha256=sha,
        media_type="image/png", width=640, height=480,
        locator=Locator(page=2, boxes=((10.0, 20.0, 300.0, 220.5),)), caption=caption,
        ocr_text="防火墙 firewall",
    )


def setup(repo: SqlRepository, *doc_ids: str) -> None:
    repo.create_kb(make_kb())
    for doc_id in doc_ids:
        repo.add_document(make_document(doc_id, status=DocumentStatus.READY,
                                        sha256=f"sha-{doc_id}"))


def test_assets_round_trip_with_their_locator_boxes(repo: SqlRepository) -> None:
    setup(repo, "doc1")
    asset = make_asset("doc1", "a" * 64)
    repo.save_assets("doc1", [asset])
    assert repo.get_asset(asset.id) == asset
    assert repo.get_assets([asset.id, "missing"]) == {asset.id: asset}
    assert repo.document_assets("doc1") == [asset]


def test_saving_again_updates_by_id(repo: SqlRepository) -> None:
    setup(repo, "doc1")
    repo.save_assets("doc1", [make_asset("doc1", "a" * 64)])
    repo.save_assets("doc1", [make_asset("doc1", "a" * 64, caption="Figure 2")])
    [stored] = repo.document_assets("doc1")
    assert stored.caption == "Figure 2"


def test_chunks_keep_the_asset_ids_they_name(repo: SqlRepository) -> None:
    setup(repo, "doc1")
    chunks = make_chunks("doc1")
    chunks[1] = chunks[1].model_copy(update={"asset_ids": ("x1", "x2")})
    repo.replace_chunks("doc1", chunks)
    stored = {c.id: c for c in repo.list_chunks("doc1")}
    assert stored[chunks[1].id].asset_ids == ("x1", "x2")
    assert stored[chunks[0].id].asset_ids == ()


def test_collecting_drops_assets_no_chunk_names_and_reports_unused_images(
    repo: SqlRepository,
) -> None:
    setup(repo, "doc1", "doc2")
    kept, dropped, shared = make_asset("doc1", "a" * 64), make_asset("doc1", "b" * 64), \
        make_asset("doc1", "c" * 64)
    repo.save_assets("doc1", [kept, dropped, shared])
    repo.save_assets("doc2", [make_asset("doc2", "c" * 64)])  # the same image in doc2
    chunks = make_chunks("doc1")
    chunks[1] = chunks[1].model_copy(update={"asset_ids": (kept.id,)})
    repo.replace_chunks("doc1", chunks)
    unused = repo.collect_assets("doc1")
    assert [a.id for a in repo.document_assets("doc1")] == [kept.id]
    assert unused == [("kb1", "b" * 64)]  # c is still held by doc2


def test_deleting_a_document_deletes_its_asset_rows(repo: SqlRepository) -> None:
    setup(repo, "doc1")
    asset = make_asset("doc1", "a" * 64)
    repo.save_assets("doc1", [asset])
    images = {("kb1", asset.sha256)}
    repo.delete_document("doc1")
    assert repo.get_asset(asset.id) is None
    assert repo.unused_images(images) == [("kb1", "a" * 64)]


def test_sweeping_a_kb_keeps_assets_of_any_stored_chunk(repo: SqlRepository) -> None:
    setup(repo, "doc1", "doc2")
    one, two = make_asset("doc1", "a" * 64), make_asset("doc2", "b" * 64)
    repo.save_assets("doc1", [one])
    repo.save_assets("doc2", [two])
    chunks = make_chunks("doc2")
    chunks[2] = chunks[2].model_copy(update={"asset_ids": (two.id,)})
    repo.replace_chunks("doc2", chunks)
    assert repo.kb_images("kb1") == {("kb1", "a" * 64), ("kb1", "b" * 64)}
    assert repo.sweep_assets("kb1") == 1
    assert repo.get_asset(one.id) is None and repo.get_asset(two.id) == two


def test_warnings_are_kept_with_the_document(repo: SqlRepository) -> None:
    setup(repo, "doc1")
    repo.set_warnings("doc1", ["image on page 2 skipped: corrupt"])
    document = repo.get_document("doc1")
    assert document is not None and document.warnings == ("image on page 2 skipped: corrupt",)
    repo.set_warnings("doc1", [])
    assert repo.get_document("doc1").warnings == ()  # type: ignore[union-attr]
