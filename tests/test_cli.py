"""The `ragsift` command as a user runs it: a real process, exit codes 0 / 1 / 2."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ragsift import cli
from ragsift.domain.errors import RetrievalUnavailable
from ragsift.retrieval.service import RetrievalService
from support.cli import ragsift

ROOT = Path(__file__).resolve().parents[1]

MANUAL = """# Aurora X200 manual

## Error codes

E-104 means Wi-Fi authentication failed: re-enter the network password.

## 保修

本产品自购买之日起保修两年，人为损坏不在保修范围内。
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    (root / "sub").mkdir()
    (root / "manual.md").write_text(MANUAL, encoding="utf-8")
    (root / "sub" / "notes.txt").write_text("Firmware 3.2 fixes E-104 on mesh networks.\n")
    return root


@pytest.fixture(scope="module")
def data_dir(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("data")
    done = ragsift(data, "ingest", str(corpus), "--kb", "manuals")
    assert done.returncode == 0, done.stderr
    assert "2 of 2 documents ingested" in done.stdout
    return data


def test_ingest_recurses_folders_and_reports_bad_files_with_exit_2(tmp_path: Path) -> None:
    (tmp_path / "docs" / "deep").mkdir(parents=True)
    (tmp_path / "docs" / "deep" / "ok.md").write_text(MANUAL, encoding="utf-8")
    (tmp_path / "docs" / "broken.pdf").write_bytes(b"%PDF-1.4 garbage")
    done = ragsift(tmp_path / "data", "ingest", str(tmp_path / "docs"), "--kb", "k")
    assert done.returncode == 2
    assert "broken.pdf" in done.stderr and "corrupt" in done.stderr
    listed = ragsift(tmp_path / "data", "docs", "list", "--kb", "k", "--json")
    statuses = {d["filename"]: d["status"] for d in json.loads(listed.stdout)}
    assert statuses == {"broken.pdf": "FAILED", "ok.md": "READY"}


def test_search_json_is_the_plain_results_array(data_dir: Path) -> None:
    done = ragsift(data_dir, "search", "what is E-104?", "--kb", "manuals", "--json")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert isinstance(hits, list) and 1 <= len(hits) <= 5
    first = hits[0]
    assert first["rank"] == 1 and "E-104" in first["text"]
    for key in ("dense_rank", "dense_score", "sparse_rank", "sparse_score", "fusion_score",
                "retrieval_sources", "document_id", "chunk_id", "heading_path", "locator"):
        assert key in first


def test_search_modes_and_top_k(data_dir: Path) -> None:
    done = ragsift(data_dir, "search", "保修多久", "--kb", "manuals", "--mode", "sparse",
                   "--top-k", "1", "--json")
    (hit,) = json.loads(done.stdout)
    assert hit["retrieval_sources"] == ["sparse:original"] and hit["dense_rank"] is None
    assert "保修两年" in hit["text"]


def test_explain_json_carries_results_faq_and_trace(data_dir: Path) -> None:
    done = ragsift(data_dir, "explain", "warranty period", "--kb", "manuals", "--json")
    payload = json.loads(done.stdout)
    assert set(payload) == {"results", "faq", "trace"}
    trace = payload["trace"]
    assert trace["mode"] == "hybrid"
    # an English query over mostly Chinese manuals also searches the second dense channel
    assert [c["list_name"] for c in trace["channels"]] == [
        "dense:original", "sparse:original", "second_dense:original"]
    assert trace["returned_count"] == len(payload["results"])


def test_explain_renders_readable_tables(data_dir: Path) -> None:
    done = ragsift(data_dir, "explain", "warranty period", "--kb", "manuals")
    assert done.returncode == 0
    assert "retrieval trace" in done.stdout and "dense:original" in done.stdout


def test_explain_says_which_switches_were_asked_none_without_flags(data_dir: Path) -> None:
    def asked(*flags: str) -> str:
        done = ragsift(data_dir, "explain", "warranty period", "--kb", "manuals", *flags)
        assert done.returncode == 0, done.stderr
        row = next(line for line in done.stdout.splitlines() if "switches asked" in line)
        return row.split("switches asked")[1].strip(" │|")

    assert asked() == "none"
    assert asked("--no-rerank", "--auto-merge") == "no rerank, auto_merge"


def _run_import_probe(data_dir: Path, body: str,
                      watched: tuple[str, ...] = ("sqlalchemy", "alembic"),
                      ) -> tuple[str, list[str]]:
    """Run `body` in a fresh interpreter on `data_dir`; what it printed, and the modules of
    the `watched` packages it imported (printed last, on a line of its own)."""
    probe = ("import json, sys\n" + body +
             f"watched = {watched!r}\n"
             "print(json.dumps(sorted(m for m in sys.modules if any("
             "m == w or m.startswith(w + '.') for w in watched))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, check=False,
                          env={**os.environ, "RAGSIFT_DATA_DIR": str(data_dir)})
    assert done.returncode == 0, done.stderr
    printed, _, modules = done.stdout.rstrip("\n").rpartition("\n")
    return printed + "\n", json.loads(modules)


def test_kb_and_docs_listings_on_sqlite_import_no_sqlalchemy_and_list_what_it_holds(
    data_dir: Path,
) -> None:
    """`kb list` and `docs list` read through sqlite3 (cli.common.open_facts); their output is
    what SqlRepository holds."""
    printed, modules = _run_import_probe(data_dir, (
        "from ragsift.cli import app\n"
        "for args in (['kb', 'list', '--json'], ['docs', 'list', '--kb', 'manuals', "
        "'--json']):\n    try:\n        app(args)\n    except SystemExit as exc:\n"
        "        assert exc.code in (0, None)\n    print('---')\n"))
    kbs, docs, _ = printed.split("---\n")
    assert modules == []
    from ragsift.adapters.sql import SqlRepository
    from ragsift.config import Settings
    from ragsift.domain.models import DocumentStatus

    repo = SqlRepository(Settings(data_dir=data_dir).resolved_database_url)
    try:
        [kb] = repo.list_kbs()
        documents = repo.list_documents(kb.id)
        assert json.loads(kbs) == [{
            "id": kb.id, "name": "manuals", "embedding_model": kb.embedding_model,
            "documents": len(documents),
            "ready": sum(d.status == DocumentStatus.READY for d in documents),
            "faq": repo.count_faq_entries(kb.id)}]
        assert json.loads(docs) == [d.model_dump(mode="json") for d in documents]
    finally:
        repo.close()

def test_kb_and_docs_listing_and_delete(data_dir: Path, tmp_path: Path) -> None:
    kbs = json.loads(ragsift(data_dir, "kb", "list", "--json").stdout)
    assert [(k["name"], k["ready"]) for k in kbs] == [("manuals", 2)]
    docs = json.loads(ragsift(data_dir, "docs", "list", "--kb", "manuals", "--json").stdout)
    notes = next(d for d in docs if d["filename"] == "notes.txt")
    assert ragsift(data_dir, "docs", "delete", notes["id"], "--kb", "manuals").returncode == 0
    hits = json.loads(ragsift(data_dir, "search", "mesh firmware", "--kb", "manuals",
                              "--json").stdout)
    assert all(h["document_id"] != notes["id"] for h in hits)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "E-104", "--kb", "nope"), "unknown knowledge base 'nope'"),
        (("search", "   ", "--kb", "manuals"), "query is empty"),
        (("search", "?!。", "--kb", "manuals"), "no letters or digits"),
        (("search", "x" * 1200, "--kb", "manuals"), "rejected rather than truncated"),
        (("search", "E-104", "--kb", "manuals", "--mode", "fuzzy"), "mode"),
        (("search", "E-104", "--kb", "manuals",
          *[arg for i in range(51) for arg in ("--doc-id", f"d{i}")]), "at most 50"),
        (("docs", "delete", "missing", "--kb", "manuals"), "not in knowledge base"),
        (("frobnicate",), "No such command"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    data_dir: Path, args: tuple[str, ...], message: str
) -> None:
    done = ragsift(data_dir, *args)
    assert done.returncode == 2
    assert message in done.stderr


def test_a_whitelist_of_unknown_ids_returns_no_results_and_says_why(data_dir: Path) -> None:
    done = ragsift(data_dir, "explain", "E-104", "--kb", "manuals", "--doc-id", 'x" OR 1==1',
                   "--json")
    payload = json.loads(done.stdout)
    assert payload["results"] == []
    assert "none of the 1 requested documents is READY" in payload["trace"]["scope"]["empty_reason"]


def test_all_channels_failing_exits_1_with_the_reason(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def down(self: RetrievalService, request: object) -> None:
        raise RetrievalUnavailable("every retrieval channel failed: index offline")

    monkeypatch.setattr(RetrievalService, "search", down)
    monkeypatch.setattr(sys, "argv", ["ragsift", "search", "E-104", "--kb", "manuals",
                                      "--data-dir", str(data_dir)])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 1
    assert "index offline" in capsys.readouterr().err


def test_a_cli_search_on_sqlite_imports_neither_sqlalchemy_nor_alembic(data_dir: Path) -> None:
    """The search reads the database through sqlite3 (ragsift.bootstrap.search): SQLAlchemy's
    import was ~0.55 CPU-s of a ~2.5 CPU-s command."""
    printed, modules = _run_import_probe(data_dir, (
        "from ragsift.cli import main\n"
        "sys.argv = ['ragsift', 'search', 'what is E-104?', '--kb', 'manuals', '--json']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None)\n"))
    assert "E-104" in json.loads(printed)[0]["text"]
    assert modules == []


def test_a_cli_search_imports_neither_the_chat_nor_the_versions(data_dir: Path) -> None:
    """The search container is built from ragsift.bootstrap, whose full container wires the
    chat and KB versions: those load with that container only, and the chat's models with
    the conversation port (ragsift.ports loads a port when asked for it)."""
    printed, modules = _run_import_probe(data_dir, (
        "from ragsift.cli import main\n"
        "sys.argv = ['ragsift', 'search', 'what is E-104?', '--kb', 'manuals', '--json']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None)\n"),
        watched=("ragsift.chat.service", "ragsift.versions.service", "ragsift.versions.writer",
                 "ragsift.domain.chat", "ragsift.ports.conversations"))
    assert "E-104" in json.loads(printed)[0]["text"]
    assert modules == []


def test_a_cli_search_cuts_its_query_without_loading_rjiebas_dictionary(data_dir: Path) -> None:
    """Its query is cut from the dictionary words it holds (query_jieba.py): rjieba's package,
    whose import builds the 349k-word dictionary, stays unloaded; hits and scores are those of
    the search that loads it."""
    body = ("from ragsift.cli import main\n"
            "sys.argv = ['ragsift', 'search', '保修多久', '--kb', 'manuals', '--json']\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None)\n")
    printed, modules = _run_import_probe(data_dir, body, watched=("rjieba",))
    assert modules == ["rjieba.rjieba"]  # the extension alone
    loaded, modules = _run_import_probe(data_dir, "import rjieba\n" + body, watched=("rjieba",))
    assert modules == ["rjieba", "rjieba.rjieba"]
    hits = json.loads(printed)
    assert hits and hits == json.loads(loaded)


@pytest.mark.parametrize("request_fields", [
    {"query": "what is E-104?"},
    {"query": "保修多久", "mode": "sparse", "top_k": 1},
    {"query": "firmware mesh", "small2big": True, "run_faq": True},
])
def test_the_search_container_finds_the_full_containers_hits_and_scores(
    data_dir: Path, request_fields: dict[str, object],
) -> None:
    from ragsift.bootstrap import build
    from ragsift.bootstrap.search import build_search
    from ragsift.config import Settings
    from ragsift.domain.requests import SearchRequest

    settings = Settings(data_dir=data_dir)
    full, light = build(settings, follow=True), build_search(settings)
    try:
        kb = full.repository.get_kb_by_name("manuals")
        assert kb is not None
        request = SearchRequest.model_validate({"kb_id": kb.id, **request_fields})
        expected = asyncio.run(full.retrieval.search(request))
        found = asyncio.run(light.retrieval.search(request))
    finally:
        full.close()
        light.close()
    assert expected.hits
    assert [h.model_dump() for h in found.hits] == [h.model_dump() for h in expected.hits]
    assert [h.model_dump() for h in found.faq_hits] == [
        h.model_dump() for h in expected.faq_hits]


def test_the_console_script_leaves_its_objects_frozen_for_the_exit() -> None:
    """`ragsift` (cli.run) freezes what the command made before the interpreter's exit
    collects it (~0.1 CPU-s of a CLI search); the exit code is main's."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    assert scripts["ragsift"] == "ragsift.cli:run"
    probe = ("import atexit, gc, sys\n"
             "atexit.register(lambda: print('frozen', gc.get_freeze_count()))\n"
             "from ragsift.cli import run\n"
             "sys.argv = ['ragsift', 'search', '--help']\n"
             "run()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, check=False)
    assert done.returncode == 0, done.stderr
    frozen = int(done.stdout.strip().splitlines()[-1].split()[1])
    assert frozen > 1000
    bad = subprocess.run([sys.executable, "-m", "ragsift", "search"], capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
                         check=False)
    assert bad.returncode == 2  # a usage error keeps its code through run()


INGEST_PROBE = """
import json, sqlite3, sys
from ragsift.cli import main
note, database = sys.argv[1:3]
sys.argv = ['ragsift', 'ingest', note, '--kb', 'notes']
try:
    main()
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
loaded = sorted(m for m in sys.modules if m == 'tokenizers' or m.startswith('tokenizers.'))
db = sqlite3.connect(database)
rows = db.execute("SELECT level, ordinal, text, token_count FROM chunks ORDER BY level, ordinal")
print(json.dumps({"tokenizers": loaded, "chunks": rows.fetchall()}))
"""


def test_a_small_ingest_chunks_as_a_large_one_without_loading_e5s_vocabulary(
    tmp_path: Path,
) -> None:
    """A one-file ingest counts and tokenizes from the e5 pieces its text holds: the whole
    vocabulary (~1 CPU-s, ~290 MB) is not loaded, the chunks and their counts are the same,
    and so are the hits of a search."""
    lines = (ROOT / "samples" / "hr-handbook-zh.md").read_text(encoding="utf-8").splitlines()
    note = tmp_path / "note.md"
    note.write_text("\n\n".join(lines[:40]) + "\n\nE-104 means the Wi-Fi password failed.\n",
                    encoding="utf-8")
    runs = {}
    for name, chars in (("light", "16384"), ("full", "0")):
        data = tmp_path / name
        done = subprocess.run(
            [sys.executable, "-c", INGEST_PROBE, str(note), str(data / "ragsift.sqlite")],
            capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, "RAGSIFT_DATA_DIR": str(data),
                 "RAGSIFT_INGEST_LIGHT_TOKENIZER_CHARS": chars})
        assert done.returncode == 0, done.stderr
        runs[name] = json.loads(done.stdout.rstrip("\n").rpartition("\n")[2])
        searched = ragsift(data, "search", "年假有几天 E-104", "--kb", "notes", "--json")
        assert searched.returncode == 0, searched.stderr
        runs[name]["hits"] = [(hit["text"], hit["dense_score"], hit["sparse_score"])
                              for hit in json.loads(searched.stdout)]
    assert runs["light"]["tokenizers"] == [] and runs["full"]["tokenizers"] != []
    assert len(runs["light"]["chunks"]) > 5
    assert runs["light"]["chunks"] == runs["full"]["chunks"]
    assert runs["light"]["hits"] and runs["light"]["hits"] == runs["full"]["hits"]
