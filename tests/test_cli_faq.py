"""`ragsift faq` and the --faq switches of search and explain, run as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import ragsift

QUESTION = "How long is the warranty?"
FAQ_JSONL = "\n".join(json.dumps(row, ensure_ascii=False) for row in [
    {"question": QUESTION, "answer": "Two years from the date of purchase.", "source": "manual"},
    {"question": "E-104 是什么错误？", "answer": "Wi-Fi 认证失败，请重新输入密码。"},
])
FAQ_CSV = "question,answer,source\nHow do I reset the router?,Hold the button for 10 s.,\n"
MANUAL = "# Aurora X200\n\n## 保修\n\n本产品自购买之日起保修两年。The warranty lasts two years.\n"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("faq_cli")
    (root / "faq.jsonl").write_text(FAQ_JSONL, encoding="utf-8")
    (root / "faq.csv").write_bytes(b"\xef\xbb\xbf" + FAQ_CSV.encode("utf-8"))
    (root / "manual.md").write_text(MANUAL, encoding="utf-8")
    data = root / "data"
    done = ragsift(data, "faq", "import", str(root / "faq.jsonl"), "--kb", "support")
    assert done.returncode == 0, done.stderr
    assert "2 added, 0 duplicate(s) skipped" in done.stdout
    done = ragsift(data, "faq", "import", str(root / "faq.csv"), "--kb", "support")
    assert "1 added" in done.stdout and "now holds 3 FAQ entries" in done.stdout
    assert ragsift(data, "ingest", str(root / "manual.md"), "--kb", "support").returncode == 0
    return data


def test_reimporting_a_file_reports_every_row_as_a_duplicate(
    data_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "again.jsonl").write_text(FAQ_JSONL, encoding="utf-8")
    done = ragsift(data_dir, "faq", "import", str(tmp_path / "again.jsonl"), "--kb", "support")
    assert done.returncode == 0, done.stderr
    assert "0 added, 2 duplicate(s) skipped" in done.stdout
    entries = json.loads(ragsift(data_dir, "faq", "list", "--kb", "support", "--json").stdout)
    assert [(e["question"], e["source"]) for e in entries] == [
        (QUESTION, "manual"), ("E-104 是什么错误？", None), ("How do I reset the router?", None),
    ]


def test_search_json_with_faq_separates_faq_from_documents(data_dir: Path) -> None:
    done = ragsift(data_dir, "search", QUESTION, "--kb", "support", "--faq", "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert set(payload) == {"results", "faq"}
    assert payload["results"][0]["filename"] == "manual.md"
    first = payload["faq"][0]
    assert first["question"] == QUESTION and first["direct_answer"] is True
    assert all("chunk_id" not in hit for hit in payload["faq"])


def test_search_json_without_faq_stays_the_plain_results_array(data_dir: Path) -> None:
    for extra in ((), ("--no-faq",)):
        done = ragsift(data_dir, "search", QUESTION, "--kb", "support", "--json", *extra)
        hits = json.loads(done.stdout)
        assert isinstance(hits, list) and hits[0]["filename"] == "manual.md"


def test_search_prints_a_faq_block_with_the_direct_answer_highlighted(data_dir: Path) -> None:
    done = ragsift(data_dir, "search", QUESTION, "--kb", "support", "--faq-top-k", "1")
    assert done.returncode == 0, done.stderr
    assert "FAQ" in done.stdout and "DIRECT ANSWER" in done.stdout
    assert "Two years from the date of purchase." in done.stdout
    assert "router" not in done.stdout  # --faq-top-k 1
    assert "manual.md" in done.stdout
    plain = ragsift(data_dir, "search", QUESTION, "--kb", "support", "--no-faq")
    assert "DIRECT ANSWER" not in plain.stdout and "manual.md" in plain.stdout


def test_explain_json_carries_the_faq_and_its_trace(data_dir: Path) -> None:
    done = ragsift(data_dir, "explain", "E-104 是什么错误", "--kb", "support", "--json")
    payload = json.loads(done.stdout)
    assert set(payload) == {"results", "faq", "trace"}
    assert payload["faq"][0]["question"] == "E-104 是什么错误？"
    assert payload["trace"]["faq"]["status"] == "applied"
    off = json.loads(ragsift(data_dir, "explain", "E-104", "--kb", "support", "--no-faq",
                             "--json").stdout)
    assert off["faq"] == [] and off["trace"]["faq"]["status"] == "off"


def test_a_malformed_file_exits_2_naming_the_lines_and_creates_nothing(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text(
        json.dumps({"question": "ok?", "answer": "ok"}) + "\n{oops\n"
        + json.dumps({"question": "no answer?"}) + "\n", encoding="utf-8",
    )
    done = ragsift(tmp_path / "data", "faq", "import", str(tmp_path / "bad.jsonl"), "--kb", "new")
    assert done.returncode == 2
    assert "line 2: invalid JSON" in done.stderr and "line 3: missing answer" in done.stderr
    assert json.loads(ragsift(tmp_path / "data", "kb", "list", "--json").stdout) == []


def test_faq_commands_on_an_unknown_knowledge_base_exit_2(data_dir: Path) -> None:
    done = ragsift(data_dir, "faq", "list", "--kb", "nope")
    assert done.returncode == 2 and "unknown knowledge base 'nope'" in done.stderr


def test_clear_removes_every_entry_of_the_knowledge_base(tmp_path: Path) -> None:
    (tmp_path / "faq.csv").write_text(FAQ_CSV, encoding="utf-8")
    data = tmp_path / "data"
    assert ragsift(data, "faq", "import", str(tmp_path / "faq.csv"), "--kb", "k").returncode == 0
    done = ragsift(data, "faq", "clear", "--kb", "k")
    assert done.returncode == 0 and "deleted 1 FAQ entries" in done.stdout
    assert json.loads(ragsift(data, "faq", "list", "--kb", "k", "--json").stdout) == []


def test_import_scope_options_are_defaults_and_search_applies_the_requests_scope(
    tmp_path: Path,
) -> None:
    (tmp_path / "faq.jsonl").write_text("\n".join(json.dumps(row) for row in [
        {"question": QUESTION, "answer": "Two years."},
        {"question": "Who repairs it?", "answer": "The service desk.", "tenant_id": "globex"},
    ]), encoding="utf-8")
    data = tmp_path / "data"
    done = ragsift(data, "faq", "import", str(tmp_path / "faq.jsonl"), "--kb", "k",
                   "--tenant-id", "acme", "--visibility", "internal", "--role", "support")
    assert done.returncode == 0, done.stderr
    entries = json.loads(ragsift(data, "faq", "list", "--kb", "k", "--json").stdout)
    assert [(e["tenant_id"], e["visibility"], e["allowed_roles"]) for e in entries] == [
        ("acme", "internal", ["support"]), ("globex", "internal", ["support"])]

    def faq(*scope: str) -> list[str]:
        found = ragsift(data, "search", "warranty repairs", "--kb", "k", "--faq", "--json",
                        *scope)
        assert found.returncode == 0, found.stderr
        return [hit["question"] for hit in json.loads(found.stdout)["faq"]]

    assert faq() == []  # both entries are for the support role: naming none is having none
    assert set(faq("--role", "support")) == {QUESTION, "Who repairs it?"}
    assert faq("--tenant-id", "t2") == []
    assert faq("--tenant-id", "acme", "--role", "support") == [QUESTION]
    assert faq("--tenant-id", "acme", "--role", "sales") == []


def test_get_update_and_delete_an_entry(tmp_path: Path) -> None:
    (tmp_path / "faq.jsonl").write_text(FAQ_JSONL, encoding="utf-8")
    data = tmp_path / "data"
    assert ragsift(data, "faq", "import", str(tmp_path / "faq.jsonl"), "--kb", "k"
                   ).returncode == 0
    first = json.loads(ragsift(data, "faq", "list", "--kb", "k", "--limit", "1", "--json"
                               ).stdout)
    assert [e["question"] for e in first] == [QUESTION]
    faq_id = first[0]["id"]
    shown = ragsift(data, "faq", "get", faq_id, "--kb", "k")
    assert shown.returncode == 0 and "Two years from the date of purchase." in shown.stdout

    updated = ragsift(data, "faq", "update", faq_id, "--kb", "k", "--answer", "Three years.",
                      "--tenant-id", "acme", "--source", "", "--json")
    assert updated.returncode == 0, updated.stderr
    new = json.loads(updated.stdout)
    assert new["id"] != faq_id
    assert (new["answer"], new["tenant_id"], new["source"]) == ("Three years.", "acme", None)
    found = json.loads(ragsift(data, "search", QUESTION, "--kb", "k", "--faq", "--json").stdout)
    assert found["faq"][0]["answer"] == "Three years."
    again = ragsift(data, "faq", "update", new["id"], "--kb", "k", "--answer", "Three years.")
    assert again.returncode == 0 and "unchanged" in again.stdout

    done = ragsift(data, "faq", "delete", new["id"], "--kb", "k")
    assert done.returncode == 0 and f"deleted FAQ entry {new['id']}" in done.stdout
    left = json.loads(ragsift(data, "faq", "list", "--kb", "k", "--json").stdout)
    assert [e["question"] for e in left] == ["E-104 是什么错误？"]
    for args in (("get", faq_id), ("delete", new["id"]), ("update", left[0]["id"])):
        failed = ragsift(data, "faq", *args, "--kb", "k")
        assert failed.returncode == 2, (args, failed.stdout)
