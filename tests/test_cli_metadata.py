"""Metadata on the command line: `ingest --meta/--meta-file` (values typed by what they read
as), `docs list`, `docs meta` (no re-embedding) and `search --where / --filter` (InvalidInput,
exit 2 from `main`, naming the bad part of a filter). In process (typer's runner): one ingest
embeds; the rest reads the facts and BM25 only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragsift.cli import app
from ragsift.domain.errors import InvalidInput


def _run(data_dir: Path, *args: str) -> Any:
    # one process: worker processes would import everything again for two small files
    runner = CliRunner(env={"RAGSIFT_PREPARE_WORKERS": "1"})
    return runner.invoke(app, [*args, "--data-dir", str(data_dir)], catch_exceptions=True)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """KB "k": manual.md and notes.txt, both ingested with the same metadata."""
    root = tmp_path_factory.mktemp("corpus")
    (root / "manual.md").write_text("# Manual\n\nE-104 means Wi-Fi authentication failed.\n")
    (root / "notes.txt").write_text("Firmware 3.2 fixes E-104 on mesh networks.\n")
    (root / "meta.json").write_text(json.dumps({"tags": ["wifi"], "year": 2020}))
    data = tmp_path_factory.mktemp("data")
    done = _run(data, "ingest", str(root / "manual.md"), str(root / "notes.txt"), "--kb", "k",
                "--meta", "dept=hr", "--meta", "year=2024", "--meta", 'code="007"',
                "--meta", "issued=2024-05-01", "--meta-file", str(root / "meta.json"))
    assert done.exit_code == 0, done.output
    return data


def test_ingest_meta_is_typed_listed_changed_by_docs_meta_and_filtered_on(
    data_dir: Path,
) -> None:
    listed = json.loads(_run(data_dir, "docs", "list", "--kb", "k", "--json").stdout)
    by_name = {d["filename"]: d for d in listed}
    # --meta overrides the file's year; "007" quoted stays a string; a date is a date
    assert by_name["manual.md"]["metadata"] == {
        "tags": ["wifi"], "year": 2024, "dept": "hr", "code": "007",
        "issued": {"$date": "2024-05-01"}}
    notes = by_name["notes.txt"]["id"]
    done = _run(data_dir, "docs", "meta", notes, "--kb", "k", "--meta", "dept=it",
                "--unset", "tags", "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout) == {"year": 2024, "dept": "it", "code": "007",
                                       "issued": {"$date": "2024-05-01"}}

    done = _run(data_dir, "search", "E-104", "--kb", "k", "--mode", "sparse",
                "--where", "dept=it", "--where", "year=2024", "--json")
    assert done.exit_code == 0, done.output
    hits = json.loads(done.stdout)
    assert hits and {h["document_id"] for h in hits} == {notes}
    assert all(h["metadata"]["dept"] == "it" for h in hits)


def test_a_bad_filter_is_refused_naming_the_offending_part(data_dir: Path) -> None:
    done = _run(data_dir, "search", "E-104", "--kb", "k", "--mode", "sparse",
                "--filter", '{"year": {"$between": [1, 2]}}')
    assert isinstance(done.exception, InvalidInput)  # main() turns it into exit 2
    assert "filter.year.$between" in str(done.exception)
    done = _run(data_dir, "search", "E-104", "--kb", "k", "--filter", "{not json")
    assert isinstance(done.exception, InvalidInput) and "--filter" in str(done.exception)


def test_sync_reads_sidecars_as_metadata_never_as_documents(tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "policy.md").write_text("# Policy\n\nExpenses are filed monthly.\n")
    sidecar = folder / "policy.md.meta.json"
    sidecar.write_text(json.dumps({"dept": "finance", "issued": {"$date": "2024-02-01"}}))
    data = tmp_path / "data"
    done = _run(data, "sync", str(folder), "--kb", "s")
    assert done.exit_code == 0, done.output

    def listed() -> dict[str, Any]:
        result = _run(data, "docs", "list", "--kb", "s", "--json")
        return {d["filename"]: d["metadata"] for d in json.loads(result.stdout)}

    assert listed() == {"policy.md": {"dept": "finance", "issued": {"$date": "2024-02-01"}}}
    sidecar.write_text(json.dumps({"dept": "hr"}))  # the file itself is unchanged
    done = _run(data, "sync", str(folder), "--kb", "s")
    assert done.exit_code == 0 and "1 unchanged" in done.stdout, done.output
    assert listed() == {"policy.md": {"dept": "hr"}}
    # ... and reaches the BM25 index's metadata terms (sync writes the index)
    from ragsift.domain.metadata_terms import scalar_token

    kb_id = json.loads(_run(data, "docs", "list", "--kb", "s", "--json").stdout)[0]["kb_id"]
    assert _indexed_with(data, kb_id, scalar_token("dept", "finance")) == 0
    assert _indexed_with(data, kb_id, scalar_token("dept", "hr")) >= 1
    sidecar.write_text('{"tenant_id": "t1"}')
    done = _run(data, "sync", str(folder), "--kb", "s")
    assert isinstance(done.exception, InvalidInput) and "policy.md.meta.json" in str(
        done.exception) and "reserved" in str(done.exception)


def test_a_sidecar_changes_only_its_own_files_document_never_a_duplicates(
        tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    text = "# Policy\n\nExpenses are filed monthly.\n"
    (folder / "policy.md").write_text(text)
    (folder / "policy.md.meta.json").write_text(json.dumps({"dept": "finance"}))
    data = tmp_path / "data"
    assert _run(data, "sync", str(folder), "--kb", "s").exit_code == 0
    # the same bytes under another key, with a sidecar of its own: a duplicate of policy.md
    (folder / "copy.md").write_text(text)
    (folder / "copy.md.meta.json").write_text(json.dumps({"dept": "ops"}))

    done = _run(data, "sync", str(folder), "--kb", "s")

    assert done.exit_code == 0, done.output
    assert "copy.md.meta.json not applied" in done.stdout, done.output
    listed = json.loads(_run(data, "docs", "list", "--kb", "s", "--json").stdout)
    assert {d["filename"]: d["metadata"] for d in listed} == {"policy.md": {"dept": "finance"}}


def test_two_files_of_one_sync_with_the_same_bytes_keep_the_documents_own_sidecar(
        tmp_path: Path) -> None:
    # the second file joins the first's document within the run (not yet READY, so not
    # flagged a duplicate): its sidecar must not overwrite that document's metadata
    folder = tmp_path / "folder"
    folder.mkdir()
    for name, dept in (("a-copy.md", "ops"), ("b-policy.md", "finance")):
        (folder / name).write_text("# Policy\n\nExpenses are filed monthly.\n")
        (folder / f"{name}.meta.json").write_text(json.dumps({"dept": dept}))

    done = _run(tmp_path / "data", "sync", str(folder), "--kb", "s")

    assert done.exit_code == 0, done.output
    [document] = json.loads(_run(tmp_path / "data", "docs", "list", "--kb", "s",
                                 "--json").stdout)
    own = json.loads((folder / f"{document['key']}.meta.json").read_text())
    assert document["metadata"] == own, done.output
    assert "not applied" in done.stdout, done.output


def test_search_and_explain_take_the_kb_option_repeated_and_name_each_hits_kb(
    data_dir: Path, tmp_path: Path,
) -> None:
    # front matter is metadata (an explicit --meta wins over it), never text
    (tmp_path / "router.md").write_text("---\ndept: network\nyear: 2023\n---\n"
                                        "# Router\n\nE-104 on the router: reset the mesh.\n")
    done = _run(data_dir, "ingest", str(tmp_path / "router.md"), "--kb", "k2",
                "--meta", "year=2025")
    assert done.exit_code == 0, done.output
    [router] = json.loads(_run(data_dir, "docs", "list", "--kb", "k2", "--json").stdout)
    assert router["metadata"] == {"dept": "network", "year": 2025}
    unindexed = _run(data_dir, "search", "network", "--kb", "k2", "--mode", "sparse", "--json")
    assert json.loads(unindexed.stdout) == []

    found = _run(data_dir, "search", "E-104", "--kb", "k", "--kb", "k2", "--mode", "sparse",
                 "--json")
    shown = _run(data_dir, "explain", "E-104 router mesh", "--kb", "k", "--kb", "k2",
                 "--mode", "sparse")

    assert found.exit_code == 0, found.output
    kbs = {kb["name"]: kb["id"] for kb in json.loads(_run(data_dir, "kb", "list",
                                                           "--json").stdout)}
    assert {h["kb_id"] for h in json.loads(found.stdout)} == {kbs["k"], kbs["k2"]}
    assert shown.exit_code == 0, shown.output
    assert "1. k2 router.md" in " ".join(shown.stdout.split())


def test_ingest_of_a_duplicate_keeps_its_metadata_unless_replace_meta(
    data_dir: Path, tmp_path: Path,
) -> None:
    copy = tmp_path / "manual-copy.md"  # manual.md's bytes under another key: a duplicate
    copy.write_text("# Manual\n\nE-104 means Wi-Fi authentication failed.\n")

    def manual() -> dict[str, Any]:
        listed = json.loads(_run(data_dir, "docs", "list", "--kb", "k", "--json").stdout)
        return next(d["metadata"] for d in listed if d["filename"] == "manual.md")

    before = manual()
    done = _run(data_dir, "ingest", str(copy), "--kb", "k", "--meta", "dept=ops")
    assert done.exit_code == 0, done.output
    assert "metadata left as it was" in done.stdout and "--replace-meta" in done.stdout
    assert manual() == before
    done = _run(data_dir, "ingest", str(copy), "--kb", "k", "--meta", "dept=ops",
                "--replace-meta")
    assert done.exit_code == 0, done.output
    assert "metadata left as it was" not in done.stdout
    assert manual() == {"dept": "ops"}


def _indexed_with(data: Path, kb_id: str, token: str) -> int:
    """Chunks of the kb's BM25 index holding one metadata term."""
    import tantivy

    from ragsift.adapters.embedded_index.bm25_kb import KbIndex
    from ragsift.adapters.embedded_index.bm25_layout import kb_directory_name
    from ragsift.adapters.embedded_index.bm25_schema import METADATA, schema

    kb = KbIndex(data / "index" / "sparse" / kb_directory_name(kb_id), schema())
    query = tantivy.Query.term_query(schema(), METADATA, token)
    return int(kb.searcher.search(query, 1, count=True).count)


def test_ingest_meta_reaches_the_index_with_the_chunks(tmp_path: Path) -> None:
    """--meta is set before the documents are processed, so BM25 holds it as terms from the
    start (a filter needs no document-by-document whitelist); a later change by `docs meta`
    (which writes no index, so it runs beside a serve) is the facts' alone and is still
    filtered on (the index's terms of it are stale, not trusted), until rebuild-sparse
    indexes it."""
    from ragsift.domain.metadata_terms import scalar_token

    (tmp_path / "a.md").write_text("# A\n\nE-104 means Wi-Fi authentication failed.\n")
    data = tmp_path / "data"
    done = _run(data, "ingest", str(tmp_path / "a.md"), "--kb", "t", "--meta", "dept=hr")
    assert done.exit_code == 0, done.output
    listed = json.loads(_run(data, "docs", "list", "--kb", "t", "--json").stdout)
    kb_id, doc_id = listed[0]["kb_id"], listed[0]["id"]
    assert _indexed_with(data, kb_id, scalar_token("dept", "hr")) >= 1
    assert _run(data, "docs", "meta", doc_id, "--kb", "t", "--meta", "dept=it").exit_code == 0
    assert _indexed_with(data, kb_id, scalar_token("dept", "hr")) >= 1  # not re-indexed
    for dept, found in (("it", {doc_id}), ("hr", set())):
        done = _run(data, "search", "E-104", "--kb", "t", "--mode", "sparse",
                    "--where", f"dept={dept}", "--json")
        assert done.exit_code == 0, done.output
        assert {h["document_id"] for h in json.loads(done.stdout)} == found
    # rebuild-sparse indexes the metadata as it is now
    assert _run(data, "rebuild-sparse", "--kb", "t").exit_code == 0
    assert _indexed_with(data, kb_id, scalar_token("dept", "hr")) == 0
    assert _indexed_with(data, kb_id, scalar_token("dept", "it")) >= 1
