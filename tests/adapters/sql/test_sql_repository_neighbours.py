"""SqlRepository.get_neighbours and get_ancestors: right rows, a constant number of statements."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from sql_factories import make_document, make_kb
from sqlalchemy import Engine, event

from ragsift.adapters.sql import SqlRepository
from ragsift.domain.models import Chunk, Locator
from ragsift.retrieval.expansion import plan_expansion

PARENTS = 100
CHILDREN = 5  # per parent


class StatementLog:
    """Every SQL statement any engine sends while the fixture is active."""

    def __init__(self) -> None:
        self.statements: list[tuple[str, Any]] = []

    def __call__(self, _conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        self.statements.append((statement, params))

    def clear(self) -> None:
        self.statements.clear()

    def __len__(self) -> int:
        return len(self.statements)


@pytest.fixture
def statements() -> Iterator[StatementLog]:
    log = StatementLog()
    event.listen(Engine, "before_cursor_execute", log)
    yield log
    event.remove(Engine, "before_cursor_execute", log)


def _document(doc_id: str) -> list[Chunk]:
    """PARENTS parents (level 0) with CHILDREN children each; child ordinals run across."""
    chunks: list[Chunk] = []
    for p in range(PARENTS):
        parent = Chunk(
            id=f"{doc_id}-p{p}", document_id=doc_id, kb_id="kb1", parent_id=None, level=0,
            ordinal=p, heading_path=("H", str(p)), locator=Locator(page=p + 1),
            text=f"parent {p}", token_count=50,
        )
        chunks.append(parent)
        chunks.extend(
            Chunk(
                id=f"{doc_id}-c{p * CHILDREN + c}", document_id=doc_id, kb_id="kb1",
                parent_id=parent.id, level=1, ordinal=p * CHILDREN + c,
                heading_path=parent.heading_path, locator=parent.locator,
                text=f"child {p * CHILDREN + c}.", token_count=5,
            )
            for c in range(CHILDREN)
        )
    return chunks


@pytest.fixture
def stocked(repo: SqlRepository) -> SqlRepository:
    repo.create_kb(make_kb())
    for doc_id in ("d1", "d2"):
        repo.add_document(make_document(doc_id))
        repo.replace_chunks(doc_id, _document(doc_id))
    # parentless chunks: two headings, a page break inside the second
    repo.add_document(make_document("flat"))
    flat = [
        Chunk(
            id=f"flat-{o}", document_id="flat", kb_id="kb1", parent_id=None, level=1, ordinal=o,
            heading_path=("A",) if o < 3 else ("B",), locator=Locator(page=1 if o < 5 else 2),
            text=f"flat {o}.", token_count=5,
        )
        for o in range(8)
    ]
    repo.replace_chunks("flat", flat)
    return repo


def _ids(chunks: list[Chunk]) -> list[str]:
    return [chunk.id for chunk in chunks]


def _expected(repo: SqlRepository, anchors: list[Chunk], window: int) -> set[str]:
    """Brute force over every stored chunk: same document, level, parent, within window."""
    anchor_ids = {a.id for a in anchors}
    found: set[str] = set()
    for doc_id in {a.document_id for a in anchors}:
        for chunk in repo.list_chunks(doc_id):
            if chunk.id not in anchor_ids and any(
                (chunk.document_id, chunk.level, chunk.parent_id)
                == (a.document_id, a.level, a.parent_id)
                and abs(chunk.ordinal - a.ordinal) <= window
                for a in anchors
            ):
                found.add(chunk.id)
    return found


def test_neighbours_are_the_same_parents_children_around_the_anchor(
    stocked: SqlRepository,
) -> None:
    [anchor] = stocked.get_chunks(["d1-c7"])  # parent 1 holds children 5..9
    assert _ids(stocked.get_neighbours([anchor], 1)) == ["d1-c6", "d1-c8"]
    assert _ids(stocked.get_neighbours([anchor], 5)) == ["d1-c5", "d1-c6", "d1-c8", "d1-c9"]


def test_neighbours_never_cross_into_another_parent_level_or_document(
    stocked: SqlRepository,
) -> None:
    [anchor] = stocked.get_chunks(["d1-c5"])  # first child of parent 1; parent 1 has ordinal 1
    neighbours = stocked.get_neighbours([anchor], 2)
    assert _ids(neighbours) == ["d1-c6", "d1-c7"]
    assert {c.document_id for c in neighbours} == {"d1"}


def test_parentless_neighbours_are_fetched_by_level_and_filtered_by_the_planner(
    stocked: SqlRepository,
) -> None:
    [anchor] = stocked.get_chunks(["flat-3"])
    neighbours = stocked.get_neighbours([anchor], 1)
    assert _ids(neighbours) == ["flat-2", "flat-4"]  # flat-2 sits under another heading
    [plan] = plan_expansion([anchor], neighbours, window=1, budget_tokens=1536)
    assert plan.context_chunk_ids == ("flat-3", "flat-4")


def test_window_zero_or_no_anchors_fetch_nothing_without_a_query(
    stocked: SqlRepository, statements: StatementLog
) -> None:
    anchors = stocked.get_chunks(["d1-c7"])
    statements.clear()
    assert stocked.get_neighbours(anchors, 0) == []
    assert stocked.get_neighbours([], 1) == []
    assert len(statements) == 0
    with pytest.raises(ValueError):
        stocked.get_neighbours(anchors, -1)


def test_random_anchors_match_a_brute_force_scan(stocked: SqlRepository) -> None:
    rng = random.Random(7)
    pool = [f"{d}-c{i}" for d in ("d1", "d2") for i in range(PARENTS * CHILDREN)]
    pool += [f"{d}-p{i}" for d in ("d1", "d2") for i in range(PARENTS)]
    for _ in range(20):
        anchors = stocked.get_chunks(rng.sample(pool, rng.randint(1, 30)))
        window = rng.randint(1, 3)
        got = stocked.get_neighbours(anchors, window)
        assert set(_ids(got)) == _expected(stocked, anchors, window)
        assert len(got) == len(set(_ids(got)))


@pytest.mark.parametrize("hit_count", [1, 5, 40, 200])
def test_small2big_fetch_is_two_statements_whatever_the_number_of_hits(
    stocked: SqlRepository, statements: StatementLog, hit_count: int
) -> None:
    # the middle child of each parent: every hit needs its own range, the worst case
    middles = [f"{d}-c{p * CHILDREN + 2}" for d in ("d1", "d2") for p in range(PARENTS)]
    hit_ids = middles[:hit_count]
    statements.clear()
    hits = stocked.get_chunks(hit_ids)
    neighbours = stocked.get_neighbours(hits, 2)
    assert len(statements) == 2
    assert len(neighbours) == 4 * len(hits)
    plans = plan_expansion(hits, neighbours, window=2, budget_tokens=10**6)
    assert all(len(plan.context_chunk_ids) == 5 for plan in plans)


def test_two_hundred_separate_ranges_are_still_one_statement(
    repo: SqlRepository, statements: StatementLog
) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("big"))
    chunks = [
        Chunk(
            id=f"big-{o}", document_id="big", kb_id="kb1", parent_id=f"big-parent-{o // 3}",
            level=1, ordinal=o, text=f"c{o}", token_count=1,
        )
        for o in range(600)
    ]
    repo.replace_chunks("big", chunks)
    anchors = [chunk for chunk in chunks if chunk.ordinal % 3 == 1]  # 200 parents, 200 ranges
    statements.clear()
    neighbours = repo.get_neighbours(anchors, 1)
    assert len(statements) == 1
    assert len(neighbours) == 400


@pytest.mark.sqlite_only
def test_neighbour_query_uses_the_parent_ordinal_index_on_sqlite(
    stocked: SqlRepository, statements: StatementLog
) -> None:
    anchors = stocked.get_chunks(["d1-c7", "d2-c12", "flat-3"])
    statements.clear()
    stocked.get_neighbours(anchors, 1)
    [(sql, params)] = statements.statements
    engine = stocked._engine
    with engine.connect() as conn:
        plan = [row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params)]
    assert any("ix_chunks_document_id_parent_id_ordinal" in step for step in plan)
    assert not any(step.startswith("SCAN") for step in plan), plan


@pytest.mark.postgresql_only
def test_neighbour_query_uses_the_parent_ordinal_index_on_postgresql(
    stocked: SqlRepository, statements: StatementLog
) -> None:
    anchors = stocked.get_chunks(["d1-c7", "d2-c12", "flat-3"])
    statements.clear()
    stocked.get_neighbours(anchors, 1)
    [(sql, params)] = statements.statements
    with stocked._engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE chunks")  # real statistics, as autovacuum would keep
        plan = [row[0] for row in conn.exec_driver_sql(f"EXPLAIN {sql}", params)]
    # One index scan per range, OR-ed into one bitmap; never a scan of the whole table.
    index = "Index Scan on ix_chunks_document_id_parent_id_ordinal"
    index_scans = [step for step in plan if index in step]
    assert len(index_scans) == 3, plan
    assert not any("Seq Scan" in step for step in plan), plan


def _three_levels(repo: SqlRepository) -> None:
    repo.create_kb(make_kb())
    repo.add_document(make_document("t"))
    tree = {"A": None, "B1": "A", "B2": "A", "c1": "B1", "c2": "B1", "c3": "B2", "solo": None}
    levels = {"A": 0, "B1": 1, "B2": 1, "solo": 0}
    repo.replace_chunks(
        "t",
        [
            Chunk(
                id=chunk_id, document_id="t", kb_id="kb1", parent_id=parent,
                level=levels.get(chunk_id, 2), ordinal=n, text=chunk_id, token_count=1,
            )
            for n, (chunk_id, parent) in enumerate(tree.items())
        ],
    )


def test_ancestors_walk_every_level_in_one_statement(
    repo: SqlRepository, statements: StatementLog
) -> None:
    _three_levels(repo)
    statements.clear()
    ancestors = repo.get_ancestors(["c1", "c2", "c3", "unknown"])
    assert len(statements) == 1
    assert _ids(ancestors) == ["A", "B1", "B2"]


def test_ancestors_leave_out_the_given_chunks_and_parentless_ones_have_none(
    repo: SqlRepository,
) -> None:
    _three_levels(repo)
    assert _ids(repo.get_ancestors(["B1", "c1"])) == ["A", "B1"]
    assert repo.get_ancestors(["solo", "A"]) == []
    assert repo.get_ancestors([]) == []


def test_ancestors_of_a_corrupt_parent_cycle_end(repo: SqlRepository) -> None:
    """A cycle cannot be written through the domain, but a damaged database may hold one:
    the recursive walk must still end, with each chunk of the cycle once."""
    repo.create_kb(make_kb())
    repo.add_document(make_document("t"))
    repo.replace_chunks("t", [
        Chunk(id=chunk_id, document_id="t", kb_id="kb1", parent_id=parent, level=1,
              ordinal=n, text=chunk_id, token_count=1)
        for n, (chunk_id, parent) in enumerate((("x", "y"), ("y", "z"), ("z", "x")))
    ])
    assert _ids(repo.get_ancestors(["x"])) == ["x", "y", "z"]
