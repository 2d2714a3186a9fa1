"""`ragsift search` / `explain` with the plan's route: a greeting is not searched and the
output says why and how to search anyway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from retrieval.real_stack import handbook_data_dir
from support.fixtures import LLMServer


def test_cli_search_of_a_greeting_says_it_was_not_searched_and_route_search_searches(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    data_dir = handbook_data_dir(tmp_path, llm_server)
    env = {key: value for key, value in os.environ.items() if not key.startswith("RAGSIFT_")}
    env.update(RAGSIFT_DATA_DIR=str(data_dir), RAGSIFT_CHUNK_TOKENS="32",
               RAGSIFT_CHUNK_OVERLAP_TOKENS="0", RAGSIFT_REWRITE="false")

    def run(command: str, query: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ragsift.cli", command, query, "--kb", "policies", *extra],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )

    greeting = run("search", "Hello!")
    assert greeting.returncode == 0, greeting.stderr
    assert "not searched: the route is chitchat" in greeting.stdout
    assert "--route search" in greeting.stdout

    explained = json.loads(run("explain", "Hello!", "--json").stdout)
    assert (explained["results"], explained["trace"]["route"]["route"]) == ([], "chitchat")

    forced = json.loads(run("search", "hotel", "--route", "search", "--json").stdout)
    assert forced and forced[0]["filename"] == "handbook.md"

    tables = run("explain", "谢谢", "--no-faq")
    assert tables.returncode == 0 and "chitchat by rules" in tables.stdout
