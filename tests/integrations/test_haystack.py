"""The Haystack components in a real Pipeline against the session's live `ragsift serve`: the
writer stores Documents under their ids, the retriever finds them with Haystack filters, and
both survive the pipeline's to_dict / from_dict round trip."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# Haystack sends usage telemetry from a pipeline run unless told not to; tests never call out.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
haystack = pytest.importorskip("haystack")  # the `haystack` extra (in the dev dependencies)

from haystack import Document, Pipeline  # noqa: E402
from haystack.utils import Secret  # noqa: E402

from client.client_helpers import Served  # noqa: E402
from ragsift.client import KbOut, RagsiftClient  # noqa: E402
from ragsift.integrations.haystack import (  # noqa: E402
    RagsiftDocumentWriter,
    RagsiftRetriever,
    haystack_filter,
)

KEY_ENV = "RAGSIFT_HAYSTACK_TEST_KEY"


@pytest.fixture(scope="module")
def kb(retrieval_server: Served) -> Iterator[KbOut]:
    with RagsiftClient(retrieval_server.url, api_key=retrieval_server.admin_key) as admin:
        made = admin.create_kb(f"haystack-{uuid.uuid4().hex[:8]}")
        yield made
        admin.delete_kb(made.id)


@pytest.fixture
def editor_key(retrieval_server: Served, monkeypatch: pytest.MonkeyPatch) -> Secret:
    monkeypatch.setenv(KEY_ENV, retrieval_server.editor_key)
    # Haystack 3 deserialises only allow-listed modules (a user adds ours the same way)
    monkeypatch.setenv("HAYSTACK_DESERIALIZATION_ALLOWLIST", "ragsift.integrations.haystack")
    return Secret.from_env_var(KEY_ENV)


def _pipeline(url: str, key: Secret, kb: str) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("retriever", RagsiftRetriever(base_url=url, api_key=key, kb=kb))
    return pipeline


def test_a_pipeline_writes_then_retrieves_with_a_haystack_filter_after_a_round_trip(
    retrieval_server: Served, kb: KbOut, editor_key: Secret,
) -> None:
    writing = Pipeline()
    writing.add_component("writer", RagsiftDocumentWriter(
        base_url=retrieval_server.url, api_key=editor_key, kb=kb.name))
    written = Pipeline.from_dict(writing.to_dict()).run({"writer": {"documents": [
        Document(id="hs-leave", content="Five unused leave days carry over.",
                 meta={"dept": "hr"}),
        Document(id="hs-hotel", content="London hotels: at most 180 GBP a night.",
                 meta={"dept": "travel"}),
    ]}})
    assert written == {"writer": {"documents_written": 2}}

    pipeline = _pipeline(retrieval_server.url, editor_key, kb.name)
    restored = Pipeline.from_dict(pipeline.to_dict())
    assert restored.to_dict() == pipeline.to_dict()
    travel = {"field": "meta.dept", "operator": "==", "value": "travel"}
    result = restored.run({"retriever": {"query": "leave or hotel", "top_k": 2,
                                         "filters": travel}})

    [found] = result["retriever"]["documents"]
    assert found.content == "London hotels: at most 180 GBP a night."
    assert found.meta["document_metadata"] == {"dept": "travel"}
    assert found.score is not None and 0.0 <= found.score <= 1.0


def test_run_async_and_the_secret_stay_out_of_the_serialised_form(
    retrieval_server: Served, kb: KbOut, editor_key: Secret,
) -> None:
    retriever = RagsiftRetriever(base_url=retrieval_server.url, api_key=editor_key, kb=kb.name,
                                 top_k=1)
    data = retriever.to_dict()
    result = asyncio.run(RagsiftRetriever.from_dict(data).run_async(query="leave days"))

    assert retrieval_server.editor_key not in str(data)
    assert data["init_parameters"]["api_key"] == {"type": "env_var", "env_vars": [KEY_ENV],
                                                  "strict": True}
    assert len(result["documents"]) <= 1


def test_haystack_filters_become_ragsifts_filter_language() -> None:
    assert haystack_filter({"operator": "AND", "conditions": [
        {"field": "meta.year", "operator": ">=", "value": 2024},
        {"field": "dept", "operator": "in", "value": ["hr", "it"]},
    ]}) == {"$and": [{"year": {"$gte": 2024}}, {"dept": {"$in": ["hr", "it"]}}]}
    assert haystack_filter({"operator": "NOT", "conditions": [
        {"field": "meta.dept", "operator": "==", "value": "hr"}]}) == {
        "$not": {"dept": {"$eq": "hr"}}}
    with pytest.raises(ValueError, match="unsupported"):
        haystack_filter({"field": "meta.x", "operator": "~", "value": 1})


def test_the_example_writes_retrieves_through_a_restored_pipeline_and_deletes(
    retrieval_server: Served, kb: KbOut, editor_key: Secret,
) -> None:
    example = Path(__file__).parents[2] / "examples" / "haystack_pipeline.py"
    env = {**os.environ, "RAGSIFT_API_KEY": retrieval_server.editor_key,
           "HAYSTACK_TELEMETRY_ENABLED": "False"}
    done = subprocess.run([sys.executable, str(example), "--url", retrieval_server.url,
                           "--kb", kb.name], capture_output=True, text=True, timeout=120,
                          check=False, env=env)

    assert done.returncode == 0, done.stderr
    assert "--- written: 2" in done.stdout and "deleted 2 documents" in done.stdout
    assert "A London hotel night may cost up to 180 GBP." in done.stdout
    assert "five days" not in done.stdout  # the filter kept the travel document only
