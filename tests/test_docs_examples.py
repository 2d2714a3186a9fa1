"""Every shell and Python example of README.md and docs/ runs against a real KB.

Two KBs (`demo`: two files of samples/, `notes`: one; real e5 and tantivy) are built once per
session; each page runs its blocks in order in a directory of its own with a copy of that data
directory (RAGSIFT_DATA_DIR), so a page may change what it likes. Blocks marked
`<!-- example: server -->` run beside one `ragsift serve` of another copy at $RAGSIFT_URL.
Known ids are in the environment as the pages name them: KB_ID, DOC_ID (the handbook's),
KEY / RAGSIFT_API_KEY (an admin key). The marker syntax: tests/support/doc_examples.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support.doc_examples import Example, documentation_pages, examples_of
from support.live_server import LiveServer, create_key, serving
from support.serve import ragsift_command

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = [e for page in documentation_pages(ROOT) for e in examples_of(page, ROOT)]
# the files of samples/ the KB is built from: small, one Chinese and one bilingual page
SAMPLE_FILES = ("hr-handbook-zh.md", "it-faq-bilingual.html")
NOTES_FILE = "release-notes-en.txt"  # a second KB, `notes`, for the several-KB examples
# what a page's directory links back to, so examples can name samples/... and examples/...
LINKED = ("samples", "examples", "scripts")
BLOCK_TIMEOUT_S = 600  # a loaded CI machine runs a dozen CLI commands slowly


@dataclass
class DocWorld:
    """The built KB, the ids the pages use, and a directory per page."""

    root: Path
    base_data: Path
    env: dict[str, str]
    pages: dict[str, Path] = field(default_factory=dict)

    def page_dir(self, page: str) -> Path:
        if page not in self.pages:
            directory = self.root / "pages" / re.sub(r"[^A-Za-z0-9]+", "-", page)
            directory.mkdir(parents=True)
            for name in LINKED:
                (directory / name).symlink_to(ROOT / name)
            shutil.copytree(self.base_data, directory / ".ragsift")
            self.pages[page] = directory
        return self.pages[page]


def run_cli(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run([*ragsift_command(), *args], capture_output=True, text=True,
                          env=env, timeout=BLOCK_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"ragsift {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="session")
def doc_world(tmp_path_factory: pytest.TempPathFactory) -> DocWorld:
    root = tmp_path_factory.mktemp("docs-examples")
    base = root / "base-data"
    env = {**os.environ, "RAGSIFT_DATA_DIR": str(base),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if os.environ.get("PYTHONPATH"):  # the blocks run elsewhere: a relative entry would miss
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(entry).resolve()) for entry in os.environ["PYTHONPATH"].split(os.pathsep))
    run_cli("ingest", *(str(ROOT / "samples" / name) for name in SAMPLE_FILES), "--kb", "demo",
            env=env)
    run_cli("ingest", str(ROOT / "samples" / NOTES_FILE), "--kb", "notes", env=env)
    documents = json.loads(run_cli("docs", "list", "--kb", "demo", "--json", env=env))
    handbook = next(d for d in documents if d["filename"] == SAMPLE_FILES[0])
    kb_id, doc_id = handbook["kb_id"], handbook["id"]
    key = create_key(base, "docs-admin", "admin")
    env.update(KB_ID=kb_id, DOC_ID=doc_id, KEY=key, RAGSIFT_API_KEY=key)
    return DocWorld(root=root, base_data=base, env=env)


@pytest.fixture(scope="session")
def doc_server(doc_world: DocWorld) -> Iterator[LiveServer]:
    data = doc_world.root / "server-data"
    shutil.copytree(doc_world.base_data, data)
    with ExitStack() as stack:
        yield stack.enter_context(serving(data, doc_world.root / "serve.log"))


def run_example(example: Example, world: DocWorld, server: LiveServer | None) -> None:
    directory = world.page_dir(example.page)
    env = {**world.env, "RAGSIFT_DATA_DIR": str(directory / ".ragsift")}
    if server is not None:
        env["RAGSIFT_URL"] = server.url
    command = (["bash", "-euo", "pipefail", "-c", example.code] if example.language == "bash"
               else [sys.executable, "-c", example.code])
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True,
                          timeout=BLOCK_TIMEOUT_S, check=False)
    server_log = f"\n--- server log:\n{server.log_text()[-3000:]}" if server else ""
    assert done.returncode == 0, (
        f"{example.id} exited {done.returncode}\n--- code:\n{example.code}--- stdout:\n"
        f"{done.stdout[-4000:]}\n--- stderr:\n{done.stderr[-4000:]}{server_log}")


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_the_documentation_example_runs(example: Example, request: pytest.FixtureRequest) -> None:
    if example.context == "skip":
        pytest.skip(f"{example.id}: {example.reason}")
    world: DocWorld = request.getfixturevalue("doc_world")
    server = request.getfixturevalue("doc_server") if example.context == "server" else None
    run_example(example, world, server)


def test_few_examples_are_skipped_and_each_says_why() -> None:
    skipped = [e for e in EXAMPLES if e.context == "skip"]
    assert all(e.reason for e in skipped)
    assert len(skipped) <= 12, [f"{e.id}: {e.reason}" for e in skipped]
    assert len(EXAMPLES) - len(skipped) >= 20  # the docs keep runnable examples
