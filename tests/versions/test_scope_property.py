"""Data scope is enforced in the index: no search returns a chunk or a FAQ entry outside its
scope.

A property over generated knowledge bases (documents across tenants, datasets, visibility
levels, allowed roles and two versions) and generated requests (scope, roles, pinned version,
mode, query): every hit is in scope, and a dense search deep enough returns exactly the
chunks in scope. The same for FAQ entries (imported, deleted and moved to another scope
across two versions). Roles fail closed: a request naming no role (None or []) is a caller
without roles, who sees only unrestricted chunks and entries. Then once end to end with the
real pipeline (e5, bootstrap).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.faq import FaqChanges, FaqEntry
from ragsift.domain.filters import valid_at
from ragsift.domain.models import CHILD_LEVEL, Document, DocumentScope
from ragsift.domain.requests import SearchRequest
from ragsift.ingestion.faq_import import FaqRow
from versions.version_stack import Stack, build_stack

WORDS = ("leave", "hotel", "meals", "budget", "travel", "policy", "salary", "laptop")
TENANTS, DATASETS = ("t1", "t2", "t3"), ("d1", "d2")
LEVELS, ROLES = ("public", "internal", "secret"), ("hr", "eng", "fin")

documents = st.lists(
    st.fixed_dictionaries({
        "tenant": st.sampled_from((None, *TENANTS)),
        "dataset": st.sampled_from((None, *DATASETS)),
        "visibility": st.sampled_from((None, *LEVELS)),
        "roles": st.lists(st.sampled_from(ROLES), unique=True, max_size=2),
        "words": st.lists(st.sampled_from(WORDS), min_size=2, max_size=8),
        "in_first": st.booleans(),  # else added by version 2
        "deleted": st.booleans(),  # a first-version document deleted by version 2
    }),
    min_size=1, max_size=8,
)


faq_entries = st.lists(
    st.fixed_dictionaries({
        "tenant": st.sampled_from((None, *TENANTS)),
        "dataset": st.sampled_from((None, *DATASETS)),
        "visibility": st.sampled_from((None, *LEVELS)),
        "roles": st.lists(st.sampled_from(ROLES), unique=True, max_size=2),
        "words": st.lists(st.sampled_from(WORDS), min_size=2, max_size=8),
        "in_first": st.booleans(),  # else added by version 2
        # what version 2 does to a first-version entry: keep, delete, or move it to a tenant
        "change": st.sampled_from(("keep", "delete", *TENANTS)),
    }),
    min_size=1, max_size=8,
)


def _some(values: tuple[str, ...]) -> st.SearchStrategy[list[str] | None]:
    # one value no document has, so "matches nothing" is generated too
    return st.none() | st.lists(st.sampled_from((*values, "other")), unique=True, max_size=3)


requests = st.lists(
    st.fixed_dictionaries({
        "tenant_ids": _some(TENANTS), "dataset_ids": _some(DATASETS),
        # roles None (about half the requests) and []: requests naming no role
        "visibilities": _some(LEVELS), "roles": _some(ROLES),
        "kb_version": st.sampled_from((1, 2)),
        "mode": st.sampled_from(("dense", "sparse", "hybrid")),
        "query": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    }),
    min_size=1, max_size=6,
)


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = build_stack(tmp_path_factory.mktemp("scope"))
    yield stack
    stack.close()


_names = itertools.count()


def in_scope(document: Document | FaqEntry, request: dict[str, Any]) -> bool:
    scope = document.scope
    pairs = ((request["tenant_ids"], scope.tenant_id), (request["dataset_ids"], scope.dataset_id),
             (request["visibilities"], scope.visibility))
    if any(wanted is not None and value not in wanted for wanted, value in pairs):
        return False
    # naming no role is having none (fail closed), never "every role"
    roles = request["roles"] or ()
    return not scope.allowed_roles or bool(set(roles) & set(scope.allowed_roles))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=documents, asks=requests)
def test_no_search_returns_a_chunk_outside_its_scope(
    shared: Stack, docs: list[dict[str, Any]], asks: list[dict[str, Any]]
) -> None:
    kb = shared.kb(f"kb{next(_names)}", mode="staged", retention=5)
    docs[0]["in_first"] = True  # version 1 is never empty
    ids: list[str] = []
    for number, spec in enumerate(docs):
        if not spec["in_first"]:
            continue
        scope = DocumentScope(tenant_id=spec["tenant"], dataset_id=spec["dataset"],
                              visibility=spec["visibility"], allowed_roles=tuple(spec["roles"]))
        ids.append(shared.add(kb, f"doc{number}.txt", f"doc{number} " + " ".join(spec["words"]),
                              scope))
    shared.versions.seal(kb)
    for doc_id, spec in zip(ids, [d for d in docs if d["in_first"]], strict=True):
        if spec["deleted"]:
            shared.ingestion.delete_document(doc_id)
    for number, spec in enumerate(docs):
        if not spec["in_first"]:
            scope = DocumentScope(tenant_id=spec["tenant"], dataset_id=spec["dataset"],
                                  visibility=spec["visibility"],
                                  allowed_roles=tuple(spec["roles"]))
            shared.add(kb, f"doc{number}.txt", f"doc{number} " + " ".join(spec["words"]), scope)
    newest = 2 if shared.versions.seal(kb) is not None else 1
    by_id = {d.id: d for d in shared.repository.list_documents(kb.id)}
    for ask in asks:
        version = min(ask["kb_version"], newest)
        fields = {name: value for name, value in ask.items() if name != "query"}
        result = shared.search(kb, ask["query"], **{**fields, "kb_version": version},
                               top_k=200, candidate_k=200, channel_k=200)
        assert result.trace.kb_version == version
        allowed = {
            chunk.id
            for document in by_id.values() if in_scope(document, ask)
            for chunk in shared.repository.list_chunks(document.id)
            if chunk.level == CHILD_LEVEL
            and valid_at(chunk.valid_from_seq, chunk.valid_to_seq, version)
        }
        found = {hit.chunk_id for hit in result.hits}
        assert found <= allowed, f"out of scope: {found - allowed}"
        if ask["mode"] == "dense":  # dense ranks every allowed chunk: exactly the scope
            assert found == allowed


def _faq_row(number: int, spec: dict[str, Any]) -> FaqRow:
    # the scope as the row's own values (the import's defaults stay empty)
    return FaqRow(f"faq{number} " + " ".join(spec["words"]), f"answer {number}", None, 1,
                  tenant_id=spec["tenant"], dataset_id=spec["dataset"],
                  visibility=spec["visibility"], allowed_roles=tuple(spec["roles"]) or None)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=faq_entries, asks=requests)
def test_no_search_returns_a_faq_entry_outside_its_scope(
    shared: Stack, specs: list[dict[str, Any]], asks: list[dict[str, Any]]
) -> None:
    kb = shared.kb(f"kb{next(_names)}", mode="staged", retention=5)
    specs[0]["in_first"] = True  # version 1 is never empty
    first = [(n, spec) for n, spec in enumerate(specs) if spec["in_first"]]
    shared.faq.import_rows(kb, [_faq_row(n, spec) for n, spec in first])
    shared.versions.seal(kb)
    live = {(e.question, e.answer): e for e in shared.repository.list_faq_entries(kb.id)}
    for number, spec in first:
        entry = live[(_faq_row(number, spec).question, f"answer {number}")]
        if spec["change"] == "delete":
            shared.faq.delete(kb, entry.id)
        elif spec["change"] != "keep":
            shared.faq.update(kb, entry.id, FaqChanges(tenant_id=spec["change"]))
    later = [_faq_row(n, spec) for n, spec in enumerate(specs) if not spec["in_first"]]
    if later:
        shared.faq.import_rows(kb, later)
    newest = 2 if shared.versions.seal(kb) is not None else 1
    stored = shared.repository.list_faq_entries(kb.id)  # every version's rows
    for ask in asks:
        version = min(ask["kb_version"], newest)
        fields = {name: value for name, value in ask.items() if name != "query"}
        result = shared.search(kb, ask["query"], **{**fields, "kb_version": version},
                               run_doc=False, run_faq=True, faq_top_k=50, candidate_k=200,
                               channel_k=200)
        assert result.trace.kb_version == version
        allowed = {entry.id for entry in stored if in_scope(entry, ask)
                   and valid_at(entry.valid_from_seq, entry.valid_to_seq, version)}
        found = {hit.faq_id for hit in result.faq_hits}
        assert found <= allowed, f"out of scope: {found - allowed}"
        if ask["mode"] == "dense":  # dense ranks every allowed entry: exactly the scope
            assert found == allowed


def test_scope_is_enforced_end_to_end_with_the_real_pipeline(tmp_path: Path) -> None:
    container = build(Settings(data_dir=tmp_path / "data", run_faq=False))
    try:
        kb = container.ingestion.ensure_kb("scoped")
        texts = {
            "acme-hr.txt": ("acme", "hr-docs", "internal", ("hr",)),
            "acme-public.txt": ("acme", "hr-docs", "public", ()),
            "globex-hr.txt": ("globex", "hr-docs", "internal", ("hr",)),
        }
        ids = {}
        for name, (tenant, dataset, visibility, roles) in texts.items():
            scope = DocumentScope(tenant_id=tenant, dataset_id=dataset, visibility=visibility,
                                  allowed_roles=roles)
            body = f"Annual leave policy of {tenant}: fifteen days per year ({name})."
            outcome = container.ingestion.ingest_bytes(kb, name, body.encode(), scope)
            assert outcome.document.error is None
            ids[name] = outcome.document.id

        def found(**scope: Any) -> set[str]:
            request = SearchRequest(query="annual leave days", kb_id=kb.id, top_k=10, **scope)
            hits = asyncio.run(container.retrieval.search(request)).hits
            return {hit.filename for hit in hits}

        # naming no role is having none: the hr-only files are left out
        assert found() == {"acme-public.txt"}
        assert found(tenant_ids=("acme",)) == {"acme-public.txt"}
        assert found(tenant_ids=("acme",), roles=()) == {"acme-public.txt"}
        assert found(roles=("hr",)) == set(texts)
        assert found(tenant_ids=("acme",), roles=("hr",)) == {"acme-hr.txt", "acme-public.txt"}
        assert found(roles=("eng",), visibilities=("internal",)) == set()
        assert found(tenant_ids=("globex",), roles=("hr", "eng")) == {"globex-hr.txt"}
    finally:
        container.close()


def test_faq_scope_is_enforced_end_to_end_with_the_real_pipeline(tmp_path: Path) -> None:
    container = build(Settings(data_dir=tmp_path / "data"))
    try:
        kb = container.ingestion.ensure_kb("scoped")
        question, answer = "How many days of annual leave?", "Fifteen days per year."
        scopes = {
            "acme-hr": DocumentScope(tenant_id="acme", visibility="internal",
                                     allowed_roles=("hr",)),
            "acme-public": DocumentScope(tenant_id="acme", visibility="public"),
            "globex-hr": DocumentScope(tenant_id="globex", visibility="internal",
                                       allowed_roles=("hr",)),
        }
        for name, scope in scopes.items():  # the same pair in three scopes: three entries
            outcome = container.faq.import_rows(kb, [FaqRow(question, answer, name, 1)],
                                                defaults=scope)
            assert outcome.added == 1

        def found(**scope: Any) -> set[str]:
            request = SearchRequest(query="annual leave days", kb_id=kb.id, run_doc=False,
                                    **scope)
            hits = asyncio.run(container.retrieval.search(request)).faq_hits
            return {hit.source or "" for hit in hits}

        assert found() == {"acme-public"}  # naming no role is having none
        assert found(roles=("hr",)) == set(scopes)
        assert found(tenant_ids=("t2",), roles=()) == set()  # once: every entry
        assert found(tenant_ids=("t2",)) == set()  # once: the hr-only entries
        assert found(tenant_ids=("acme",)) == {"acme-public"}
        assert found(tenant_ids=("acme",), roles=("hr",)) == {"acme-hr", "acme-public"}
        assert found(tenant_ids=("acme",), roles=()) == {"acme-public"}
        assert found(roles=("hr",), visibilities=("internal",)) == {"acme-hr", "globex-hr"}
        assert found(sources=("globex-hr",)) == set()
        assert found(sources=("globex-hr",), roles=("hr",)) == {"globex-hr"}
        assert found(tenant_ids=("globex",), roles=("eng",)) == set()
    finally:
        container.close()
