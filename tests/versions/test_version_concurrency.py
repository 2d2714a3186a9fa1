"""Activation is one atomic switch: searches running meanwhile see one version, never a mix."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from versions.version_stack import Stack

V1 = {"leave.txt": "Employees get fifteen days of annual leave every year.",
      "hotel.txt": "The hotel limit per night is one hundred fifty dollars."}
V2 = {"leave-2025.txt": "From 2025 employees get twenty days of annual leave per year.",
      "meals.txt": "Meals on business trips are paid up to sixty dollars per day."}
QUERIES = ("annual leave days per year", "dollars per night or per day", "employees")


def answer(stack: Stack, query: str, **fields: Any) -> tuple[int | None, list[tuple[str, float]]]:
    result = stack.search(stack.kb(), query, **fields)
    return result.trace.kb_version, [(h.chunk_id, h.fusion_score) for h in result.hits]


def test_searches_during_activations_each_see_exactly_one_version(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = stack.kb(mode="staged", retention=5)
    first = {name: stack.add(kb, name, text) for name, text in V1.items()}
    stack.versions.seal(kb)
    stack.ingestion.delete_document(first["leave.txt"])
    for name, text in V2.items():
        stack.add(kb, name, text)
    stack.versions.seal(kb)
    stack.versions.activate(kb, 1)
    expected = {v: {q: answer(stack, q, kb_version=v)[1] for q in QUERIES} for v in (1, 2)}
    assert all(expected[1][q] != expected[2][q] for q in QUERIES)

    # a slower index widens the window in which an activation lands mid-request
    dense = stack.index.search_dense

    def slow_dense(*args: Any) -> Any:
        time.sleep(0.003)
        return dense(*args)

    monkeypatch.setattr(stack.index, "search_dense", slow_dense)
    stop = threading.Event()
    seen: list[tuple[str, int | None, list[tuple[str, float]]]] = []
    errors: list[BaseException] = []

    def searcher(offset: int) -> None:
        turn = offset
        try:
            while not stop.is_set():
                query = QUERIES[turn % len(QUERIES)]
                seen.append((query, *answer(stack, query)))
                turn += 1
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=searcher, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    try:
        for switch in range(30):
            time.sleep(0.01)
            if switch % 2 == 0:
                stack.versions.activate(kb, 2)
            else:
                stack.versions.rollback(kb, 1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert errors == []
    assert {version for _, version, _ in seen} == {1, 2}
    mixed = [(q, v) for q, v, hits in seen if v not in expected or hits != expected[v][q]]
    assert mixed == [] and len(seen) > 60
