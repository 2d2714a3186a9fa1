"""A key revoked while its chat answer streams: that answer finishes, the next request is 401."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.auth_helpers import bearer
from api.chat_helpers import chat_settings, copy_data, parse_sse, seed
from api.conftest import open_api
from ragsift.auth.keys import Role
from ragsift.auth.service import KeyService
from support.fixtures import LLMServer


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("auth_chat_seed") / "data"
    seed(data)
    return data


def test_a_key_revoked_mid_stream_lets_the_answer_finish_then_is_refused(
    seeded: Path, tmp_path: Path, llm_server: LLMServer,
) -> None:
    data = copy_data(seeded, tmp_path / "data")
    llm_server.control(chat={"deltas": ["The limit ", "is 150 ", "[1](citation://1)."],
                             "delay_s": 0.3})
    with open_api(data, auth=True, **chat_settings(llm_server.url)) as api:
        keys = KeyService(api.container.repository)
        _, secret = keys.create("streamer", Role.READER)
        body = {"kb": "docs", "message": "hotel limit per night?"}
        chunks: list[str] = []
        with api.client.stream("POST", "/api/chat/stream", json=body,
                               headers=bearer(secret)) as response:
            assert response.status_code == 200
            for text in response.iter_text():
                chunks.append(text)
                if len(chunks) == 1:
                    keys.revoke("streamer")  # checked when a request starts, not mid-answer
        events = parse_sse("".join(chunks))
        assert [name for name, _ in events][-2:] == ["citations", "done"]
        again = api.client.post("/api/chat", json=body, headers=bearer(secret))
        assert again.status_code == 401
