"""`ragsift kb version ...`, `--kb-version` and `--role` as a user runs them (real processes)."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import ragsift

LEAVE = "# Leave\n\nEmployees get fifteen days of annual leave every year.\n"
HOTEL = "# Hotels\n\nThe hotel limit per night is 150 dollars.\n"
SALARY = "# Salary bands\n\nSalary bands are reviewed every spring by the HR team.\n"


def run(data: Path, *args: str) -> str:
    done = ragsift(data, *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def found(data: Path, query: str, *args: str) -> list[str]:
    hits = json.loads(run(data, "search", query, "--kb", "hr", "--json", *args))
    return [hit["filename"] for hit in hits]


def test_the_version_workflow_on_the_command_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for name, text in (("leave.md", LEAVE), ("hotel.md", HOTEL), ("salary.md", SALARY)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "gate.jsonl").write_text(
        '{"query": "annual leave days", "relevant": {"leave.md": 1}}\n', encoding="utf-8")
    # auto mode (the default): found right away
    run(data, "ingest", str(tmp_path / "leave.md"), "--kb", "hr")
    assert found(data, "annual leave") == ["leave.md"]
    config = json.loads(run(data, "kb", "version", "config", "--kb", "hr", "--mode", "staged",
                            "--retention", "5", "--gate", str(tmp_path / "gate.jsonl"),
                            "--gate-k", "3", "--json"))
    assert (config["mode"], config["retention"], config["active_seq"]) == ("staged", 5, 1)
    assert config["gate"] == {"queries": 1, "k": 3, "max_drop": 0.0}
    # staged: ingested, but not searched until a version holding it is active
    staged = run(data, "ingest", str(tmp_path / "hotel.md"), "--kb", "hr")
    assert "'hr' is staged: the changes wait in draft version 2 (active: 1)" in staged
    run(data, "ingest", str(tmp_path / "salary.md"), "--kb", "hr", "--role", "hr")
    assert "hotel.md" not in found(data, "hotel limit per night")
    sealed = json.loads(run(data, "kb", "version", "new", "--kb", "hr", "--note", "hotels",
                            "--json"))
    assert sealed["version"]["seq"] == 2 and sealed["version"]["added"] == 2
    diff = json.loads(run(data, "kb", "version", "diff", "--kb", "hr", "--json"))
    assert (diff["from_seq"], diff["to_seq"], diff["added"], diff["removed"]) == (1, 2, 2, 0)
    assert found(data, "hotel limit per night", "--kb-version", "2")[0] == "hotel.md"
    activated = json.loads(run(data, "kb", "version", "activate", "2", "--kb", "hr", "--json"))
    assert activated["to_seq"] == 2 and activated["gate"]["passed"]
    assert found(data, "hotel limit per night")[0] == "hotel.md"
    # the salary bands are for the hr role only
    assert "salary.md" not in found(data, "salary bands", "--role", "sales")
    assert found(data, "salary bands", "--role", "hr")[0] == "salary.md"
    explain = json.loads(run(data, "explain", "hotel", "--kb", "hr", "--kb-version", "1",
                             "--json"))
    assert explain["trace"]["kb_version"] == 1
    assert {hit["filename"] for hit in explain["results"]} == {"leave.md"}
    # a version that loses the labelled query is refused (exit 2) unless forced
    docs = json.loads(run(data, "docs", "list", "--kb", "hr", "--json"))
    leave_id = next(d["id"] for d in docs if d["filename"] == "leave.md")
    run(data, "docs", "delete", leave_id, "--kb", "hr")
    run(data, "kb", "version", "new", "--kb", "hr")
    refused = ragsift(data, "kb", "version", "activate", "3", "--kb", "hr")
    assert refused.returncode == 2
    assert "Recall@3 drops from 1.0000 to 0.0000" in refused.stderr
    assert "annual leave days" in refused.stdout  # the per-query differences
    forced = json.loads(run(data, "kb", "version", "activate", "3", "--kb", "hr", "--force",
                            "--json"))
    assert forced["forced"] and not forced["gate"]["passed"]
    assert "leave.md" not in found(data, "annual leave")
    back = json.loads(run(data, "kb", "version", "rollback", "--kb", "hr", "--json"))
    assert (back["from_seq"], back["to_seq"]) == (3, 2)
    assert found(data, "annual leave")[0] == "leave.md"
    listing = json.loads(run(data, "kb", "version", "list", "--kb", "hr", "--json"))
    assert [v["seq"] for v in listing["versions"]] == [1, 2, 3]
    assert listing["state"]["active_seq"] == 2
    assert [a["action"] for a in listing["activations"]][:2] == ["rollback", "activate"]
    unknown = ragsift(data, "search", "x", "--kb", "hr", "--kb-version", "9")
    assert unknown.returncode == 2 and "version 9" in unknown.stderr
