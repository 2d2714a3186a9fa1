"""Roles fail closed on the command line, on both index backends (real processes): a search
that names no role finds neither a chunk nor a FAQ entry restricted to a role."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import ragsift
from support.index_backends import SYSTEM_BACKENDS, index_uri

SALARY = "# Salary bands\n\nSalary bands are reviewed every spring by the HR team.\n"
PAYDAY = "# Payday\n\nSalary is paid on the last working day of every month.\n"
FAQ = "\n".join(json.dumps(row) for row in [
    {"question": "When are salary bands reviewed?", "answer": "Every spring.",
     "allowed_roles": ["hr"]},
    {"question": "When is salary paid?", "answer": "On the last working day."},
])


@pytest.mark.parametrize("backend", SYSTEM_BACKENDS)
def test_a_search_naming_no_role_finds_no_role_restricted_chunk_or_faq_entry(
    tmp_path: Path, backend: str
) -> None:
    uri = index_uri(backend, tmp_path / "milvus")
    env = {"RAGSIFT_INDEX_URI": uri} if uri else {}
    data = tmp_path / "data"

    def run(*args: str) -> str:
        done = ragsift(data, *args, env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    for name, text in (("salary.md", SALARY), ("payday.md", PAYDAY), ("faq.jsonl", FAQ)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    run("ingest", str(tmp_path / "salary.md"), "--kb", "k", "--tenant-id", "t2", "--role", "hr")
    run("ingest", str(tmp_path / "payday.md"), "--kb", "k", "--tenant-id", "t2")
    run("faq", "import", str(tmp_path / "faq.jsonl"), "--kb", "k", "--tenant-id", "t2")

    def found(*scope: str) -> tuple[set[str], set[str]]:
        payload = json.loads(run("search", "salary bands reviewed paid", "--kb", "k", "--faq",
                                 "--json", *scope))
        return ({hit["filename"] for hit in payload["results"]},
                {hit["question"] for hit in payload["faq"]})

    unrestricted = ({"payday.md"}, {"When is salary paid?"})
    assert found("--tenant-id", "t2") == unrestricted
    assert found() == unrestricted
    assert found("--tenant-id", "t2", "--role", "hr") == (
        {"salary.md", "payday.md"}, {"When are salary bands reviewed?", "When is salary paid?"})
