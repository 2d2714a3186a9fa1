"""Images in chat answers over HTTP, on the real stack (e5, tantivy, SQLite) with the real local
model server: a .docx with a picture is ingested, the prompt lists the picture as `asset://ID`,
the model's `![caption](asset://ID)` is kept (images of other KBs or made-up ids are removed)
in the JSON, SSE and OpenAI-compatible answers, and a restored conversation shows it again."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.api_helpers import Api
from api.chat_helpers import chat_settings, copy_data, parse_sse
from api.conftest import open_api
from support.fixtures import LLMServer

QUESTION = "What does the office network diagram show?"
MADE_UP = "0123456789abcdef0123456789abcdef"


def network_docx(colour: tuple[int, int, int], topic: str = "office network") -> bytes:
    """A .docx with a heading, a paragraph and one 200x150 PNG picture (python-docx)."""
    import docx
    from PIL import Image

    picture = io.BytesIO()
    Image.new("RGB", (200, 150), colour).save(picture, "PNG")
    picture.seek(0)
    document = docx.Document()
    document.add_heading(f"The {topic} diagram", 1)
    document.add_paragraph(f"The {topic} diagram shows the core switch and two access points.")
    document.add_picture(picture)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


Seeded = tuple[Path, dict[str, Any]]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """KB "docs" with the red diagram, KB "other" with a blue one; their asset records."""
    data = tmp_path_factory.mktemp("chat_images_seed") / "data"
    found: dict[str, Any] = {}
    with open_api(data) as api:
        for kb, colour in (("docs", (200, 30, 30)), ("other", (30, 30, 200))):
            kb_id = api.create_kb(kb)
            [document_id] = api.ingest(kb_id, {f"{kb}.docx": network_docx(colour)})
            response = api.client.get(f"/api/documents/{document_id}/assets")
            assert response.status_code == 200, response.text
            [asset] = response.json()
            found[kb] = asset
    return data, found


@pytest.fixture(scope="module")
def model_api(seeded: Seeded, tmp_path_factory: pytest.TempPathFactory,
              llm_server_process: LLMServer) -> Iterator[Api]:
    data = copy_data(seeded[0], tmp_path_factory.mktemp("chat_images_model") / "data")
    with open_api(data, **chat_settings(llm_server_process.url)) as api:
        yield api


def _answer(ours: str, theirs: str) -> str:
    return (f"It shows the core switch [1](citation://1).\n\n![Network diagram](asset://{ours})"
            f"\n\n![blue](asset://{theirs}) ![made up](asset://{MADE_UP})")


def _ref(asset: dict[str, Any]) -> dict[str, Any]:
    return {"id": asset["id"], "media_type": "image/png", "width": 200, "height": 150,
            "caption": asset["caption"], "page": None, "slide": None}


def _stored_turn(api: Api, conversation_id: str) -> dict[str, Any]:
    response = api.client.get(f"/api/conversations/{conversation_id}")
    assert response.status_code == 200, response.text
    [turn] = response.json()["turns"]
    return dict(turn)


def test_the_json_answer_keeps_only_the_image_of_its_evidence_and_the_turn_restores_it(
    model_api: Api, llm_server: LLMServer, seeded: Seeded,
) -> None:
    ours, theirs = seeded[1]["docs"], seeded[1]["other"]
    llm_server.control(chat={"content": _answer(ours["id"], theirs["id"])})

    response = model_api.client.post("/api/chat", json={"kb": "docs", "message": QUESTION})

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["answer"] == ("It shows the core switch [1](citation://1).\n\n"
                              f"![Network diagram](asset://{ours['id']})")
    assert body["assets"] == [_ref(ours)]
    holders = [item for item in body["evidence"] if item["assets"]]
    assert holders and holders[0]["assets"] == [_ref(ours)]
    prompt = llm_server.last("chat")["body"]["messages"][-1]["content"]
    assert f"Image: ![{ours['caption'] or 'image'}](asset://{ours['id']})" in prompt
    assert theirs["id"] not in prompt

    stored = _stored_turn(model_api, body["conversation_id"])
    assert (stored["answer"], stored["assets"]) == (body["answer"], body["assets"])
    assert stored["evidence"] == body["evidence"]
    image = model_api.client.get(f"/api/assets/{ours['id']}")
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    from PIL import Image

    with Image.open(io.BytesIO(image.content)) as decoded:
        assert decoded.size == (200, 150)
        assert decoded.convert("RGB").getpixel((5, 5)) == (200, 30, 30)


def test_the_sse_stream_carries_the_kept_images_with_the_final_answer(
    model_api: Api, llm_server: LLMServer, seeded: Seeded,
) -> None:
    ours, theirs = seeded[1]["docs"], seeded[1]["other"]
    llm_server.control(chat={"content": _answer(ours["id"], theirs["id"]), "chunk_chars": 7})

    response = model_api.client.post("/api/chat/stream", json={"kb": "docs", "message": QUESTION})

    assert response.status_code == 200, response.text
    events = parse_sse(response.text)
    assert [name for name, _ in events][-2:] == ["citations", "done"]
    final = events[-2][1]
    assert final["assets"] == [_ref(ours)]
    assert f"asset://{ours['id']}" in final["answer"] and theirs["id"] not in final["answer"]
    stored = _stored_turn(model_api, events[0][1]["conversation_id"])
    assert stored["assets"] == [_ref(ours)] and stored["answer"] == final["answer"]


def test_the_openai_compatible_answer_keeps_the_image_in_its_text_and_extension(
    model_api: Api, llm_server: LLMServer, seeded: Seeded,
) -> None:
    ours, theirs = seeded[1]["docs"], seeded[1]["other"]
    llm_server.control(chat={"content": _answer(ours["id"], theirs["id"])})
    body = {"model": "kb:docs", "messages": [{"role": "user", "content": QUESTION}]}

    response = model_api.client.post("/v1/chat/completions", json=body)
    streamed = model_api.client.post("/v1/chat/completions", json={**body, "stream": True})

    assert response.status_code == 200, response.text
    completion = response.json()
    content = completion["choices"][0]["message"]["content"]
    assert content.endswith(f"![Network diagram](asset://{ours['id']})")
    assert completion["ragsift"]["assets"] == [_ref(ours)]
    lines = [line[len("data: "):] for line in streamed.text.split("\n\n") if line]
    assert lines[-1] == "[DONE]"
    assert json.loads(lines[-2])["ragsift"]["assets"] == [_ref(ours)]


def test_an_image_of_another_knowledge_base_alone_is_removed_and_nothing_is_shown(
    model_api: Api, llm_server: LLMServer, seeded: Seeded,
) -> None:
    theirs = seeded[1]["other"]
    llm_server.control(chat={"content": f"Here: ![blue](asset://{theirs['id']})"})
    body = model_api.client.post("/api/chat", json={"kb": "docs", "message": QUESTION}).json()
    assert (body["answer"], body["assets"]) == ("Here:", [])
    assert _stored_turn(model_api, body["conversation_id"])["assets"] == []


def test_without_a_chat_model_the_extractive_answer_shows_the_top_evidences_image(
    seeded: Seeded, tmp_path: Path,
) -> None:
    ours = seeded[1]["docs"]
    data = copy_data(seeded[0], tmp_path / "data")
    with open_api(data, **chat_settings(None)) as api:
        body = api.client.post("/api/chat", json={"kb": "docs", "message": QUESTION}).json()
    assert body["extractive"] is True
    assert body["evidence"][0]["assets"] == [_ref(ours)]
    assert body["answer"].endswith(f"(asset://{ours['id']})")
    assert body["assets"] == [_ref(ours)]
