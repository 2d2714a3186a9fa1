"""A fresh version stack per test (SQLite, tantivy, dense matrix; a word-hash embedder)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from versions.version_stack import Stack, build_stack

StackFactory = Callable[..., Stack]


@pytest.fixture
def make_stack(tmp_path: Path) -> Iterator[StackFactory]:
    stacks: list[Stack] = []

    def make(**settings: Any) -> Stack:
        stack = build_stack(tmp_path / f"stack{len(stacks)}", **settings)
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()


@pytest.fixture
def stack(make_stack: StackFactory) -> Stack:
    return make_stack()
