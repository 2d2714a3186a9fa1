"""plan_document: which chunks a new version shares, adds, retires and drops."""

from __future__ import annotations

from ragsift.domain.models import CHILD_LEVEL, PARENT_LEVEL, Chunk, chunk_id
from ragsift.versions.builder import derived_id, plan_document


def parent(text: str, ordinal: int = 0, doc: str = "d1") -> Chunk:
    return Chunk(id=chunk_id(doc, PARENT_LEVEL, ordinal, text), document_id=doc, kb_id="kb",
                 parent_id=None, level=PARENT_LEVEL, ordinal=ordinal, text=text,
                 token_count=len(text.split()))


def child(text: str, of: Chunk, ordinal: int) -> Chunk:
    return Chunk(id=chunk_id(of.document_id, CHILD_LEVEL, ordinal, text),
                 document_id=of.document_id, kb_id="kb", parent_id=of.id, level=CHILD_LEVEL,
                 ordinal=ordinal, text=text, token_count=len(text.split()))


def stored(chunks: list[Chunk], valid_from: int, valid_to: int = 0) -> list[Chunk]:
    return [c.model_copy(update={"valid_from_seq": valid_from, "valid_to_seq": valid_to})
            for c in chunks]


P = parent("leave policy")
A, B = child("fifteen days", P, 0), child("five carry over", P, 1)


def test_a_new_document_adds_every_chunk_valid_from_the_draft() -> None:
    plan = plan_document([P, A, B], [], draft_seq=3)
    assert [c.id for c in plan.add] == [P.id, A.id, B.id]
    assert {(c.valid_from_seq, c.valid_to_seq) for c in plan.add} == {(3, 0)}
    assert plan.keep == plan.retire == plan.drop == () and plan.basis == frozenset()


def test_identical_chunks_are_shared_with_their_original_window() -> None:
    rows = stored([P, A, B], valid_from=1)
    plan = plan_document([P, A, B], rows, draft_seq=4)
    assert plan.keep == tuple(rows) and plan.changes == 0
    assert {c.valid_from_seq for c in plan.keep} == {1}


def test_a_changed_child_retires_the_old_row_and_adds_the_new_one() -> None:
    rows = stored([P, A, B], valid_from=1)
    changed = child("six carry over", P, 1)
    plan = plan_document([P, A, changed], rows, draft_seq=2)
    assert {c.id for c in plan.keep} == {P.id, A.id}
    assert [c.id for c in plan.add] == [changed.id]
    assert [c.id for c in plan.retire] == [B.id] and plan.drop == ()


def test_deleting_a_document_retires_sealed_rows_and_drops_draft_only_rows() -> None:
    rows = stored([P, A], valid_from=1) + stored([B], valid_from=5)
    plan = plan_document([], rows, draft_seq=5)
    assert {c.id for c in plan.retire} == {P.id, A.id}
    assert [c.id for c in plan.drop] == [B.id]
    assert plan.basis == {P.id, A.id, B.id}


def test_retired_rows_are_not_live_and_a_returning_chunk_gets_a_derived_id() -> None:
    # B was retired by version 3; at draft 6 the same chunk comes back
    rows = stored([P, A], valid_from=1) + stored([B], valid_from=1, valid_to=3)
    plan = plan_document([P, A, B], rows, draft_seq=6)
    assert plan.basis == {P.id, A.id}
    assert [c.id for c in plan.add] == [derived_id(B.id, 6)]
    assert plan.add[0].text == B.text and plan.add[0].valid_from_seq == 6


def test_a_re_keyed_parent_takes_its_children_along() -> None:
    # the parent's id is taken by a row with another heading path (same text, so same id)
    rows = stored([P.model_copy(update={"heading_path": ("Old",)}), A], valid_from=1)
    new_parent = P.model_copy(update={"heading_path": ("New",)})
    plan = plan_document([new_parent, A], rows, draft_seq=2)
    new_id = derived_id(P.id, 2)
    added = {c.level: c for c in plan.add}
    assert added[PARENT_LEVEL].id == new_id
    # the child's text is unchanged but it now points to the new parent: a new row too
    assert added[CHILD_LEVEL].parent_id == new_id
    assert added[CHILD_LEVEL].id == derived_id(A.id, 2)
    assert {c.id for c in plan.retire} == {P.id, A.id}


def test_planning_twice_in_one_draft_keeps_what_the_draft_already_added() -> None:
    rows = stored([P, A], valid_from=1)
    changed = child("sixteen days", P, 0)
    first = plan_document([P, changed], rows, draft_seq=2)
    after = [r for r in rows if r.id != A.id] + stored([A], 1, 2) + list(first.add)
    again = plan_document([P, changed], after, draft_seq=2)
    assert again.changes == 0 and {c.id for c in again.keep} == {P.id, changed.id}
