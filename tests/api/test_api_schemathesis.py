"""Property-based run over the app's own OpenAPI document: no operation answers with a 5xx.

Each operation gets 25 valid and 25 invalid generated requests (deterministic: derandomized
Hypothesis, no example database), twice where it has path parameters: once with generated ids
and once with the ids of a live knowledge base, document and conversation (deletes run
last). Generated retrieval bodies are pointed at the live knowledge base so the real search
runs.
schemathesis' pytest plugin (`from_fixture`) does not run under pytest 9, so the operations
are driven with `as_strategy` and `@given` directly.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import APIOperation, Case, GenerationMode, openapi

from api.api_helpers import HOTELS
from api.conftest import open_api

EXAMPLES_PER_OPERATION = 25
BOUNDED = settings(
    max_examples=EXAMPLES_PER_OPERATION, derandomize=True, database=None, deadline=None,
    phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
)


def _run(operation: APIOperation, mode: GenerationMode, pinned: dict[str, Any],
         server_errors: list[str]) -> int:
    """Call `operation` with generated requests; 5xx answers go to `server_errors`."""
    calls = 0

    @BOUNDED
    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=pinned or None))
    def call(case: Case) -> None:
        nonlocal calls
        calls += 1
        if mode == GenerationMode.POSITIVE and isinstance(case.body, dict) \
                and operation.path.startswith("/api/retrieval/"):
            case.body.pop("kb_id", None)
            case.body["kb"] = "docs"
        if isinstance(case.body, dict) and isinstance(case.body.get("texts"), list):
            # up to 100 texts per request, each ingested with the real embedder: one is enough
            case.body["texts"] = case.body["texts"][:1]
        response = case.call()
        if response.status_code >= 500:
            server_errors.append(f"{case.method} {case.formatted_path} ({mode.value}) -> "
                                 f"{response.status_code}: {response.text[:300]}")

    try:
        call()
    except Unsatisfiable:
        # nothing to make invalid (no parameters and no body): nothing to run
        assert mode == GenerationMode.NEGATIVE, operation.label
    return calls


def test_no_operation_answers_with_a_server_error(tmp_path: Path) -> None:
    with open_api(tmp_path / "data", max_file_bytes=64 * 1024) as api:
        kb_id = api.create_kb("docs")
        [document_id] = api.ingest(kb_id, {"hotels.md": HOTELS})
        chat = api.client.post("/api/chat", json={"kb_id": kb_id, "message": "hotel limit"})
        assert chat.status_code == 200, chat.text
        live = {"kb_id": kb_id, "document_id": document_id,
                "conversation_id": chat.json()["conversation_id"]}
        schema = openapi.from_asgi("/openapi.json", api.client.app)
        operations = sorted((result.ok() for result in schema.get_all_operations()),
                            key=lambda op: (op.method.upper() == "DELETE", op.path))
        assert len(operations) >= 14
        server_errors: list[str] = []
        calls = 0

        for pinning in (False, True):
            for operation in operations:
                names = re.findall(r"{(\w+)}", operation.path)
                if pinning and not names:
                    continue
                # parameters without a live value stay generated
                pinned = {n: live[n] for n in names if n in live} if pinning else {}
                for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                    calls += _run(operation, mode, pinned, server_errors)

        assert not server_errors, "\n".join(server_errors)
        assert calls > 25 * len(operations)
        assert api.client.get("/readyz").status_code == 200
