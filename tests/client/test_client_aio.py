"""AsyncRagsiftClient against the live server: the same answers and errors as the sync one."""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from pathlib import Path

import pytest

from api.api_helpers import FIRMWARE
from client.client_helpers import Handbook, Served
from ragsift.client import (
    AsyncRagsiftClient,
    ChatEvent,
    ChatOut,
    CitationsEvent,
    DeltaEvent,
    DocumentStatus,
    DoneEvent,
    ExplainOut,
    ForbiddenError,
    NotFoundError,
    RetrievalHit,
    TraceEvent,
    UnauthorizedError,
)


def test_upload_with_progress_wait_and_search_in_asyncio(served: Served, tmp_path: Path) -> None:
    on_disk = tmp_path / "firmware.txt"
    on_disk.write_bytes(FIRMWARE)
    progress: list[tuple[int, int]] = []

    async def scenario() -> tuple[list[RetrievalHit], ExplainOut, str]:
        async with AsyncRagsiftClient(served.url, api_key=served.admin_key) as client:
            kb = await client.create_kb("async-uploads")
            [uploaded] = await client.upload_documents(
                kb.id, [on_disk], progress=lambda *p: progress.append(p))
            [ready] = await client.wait_until_ready([uploaded.id], timeout=120)
            assert ready.status == DocumentStatus.READY
            hits = await client.search("error E-104", kb_id=kb.id, mode="sparse")
            explained = await client.explain("Wi-Fi authentication", kb="async-uploads")
            await client.delete_kb(kb.id)
            return hits, explained, uploaded.id

    hits, explained, document_id = asyncio.run(scenario())

    assert progress[0][0] == 0 and progress[-1][0] == progress[-1][1] > len(FIRMWARE)
    assert isinstance(hits[0], RetrievalHit) and hits[0].document_id == document_id
    assert isinstance(explained, ExplainOut) and explained.results[0].document_id == document_id


def test_chat_and_its_stream_in_asyncio(served: Served, handbook: Handbook) -> None:
    async def scenario() -> tuple[ChatOut, list[ChatEvent], int]:
        async with AsyncRagsiftClient(served.url, api_key=served.reader_key) as client:
            first = await client.chat("hotel limit per night?", kb_id=handbook.kb.id)
            stream = client.chat_stream("年假可以结转几天？", kb="handbook",
                                        conversation_id=first.conversation_id)
            async with aclosing(stream) as events:
                received = [event async for event in events]
            stored = await client.get_conversation(first.conversation_id)
            await client.delete_conversation(first.conversation_id)
            return first, received, len(stored.turns)

    first, events, turns = asyncio.run(scenario())

    assert first.extractive and first.citations
    assert isinstance(events[0], TraceEvent) and isinstance(events[-1], DoneEvent)
    assert any(isinstance(event, DeltaEvent) for event in events)
    [citations] = [event for event in events if isinstance(event, CitationsEvent)]
    assert citations.citations[0].document_id == handbook.leave.id
    assert turns == 2


def test_errors_map_to_the_same_exceptions_in_asyncio(served: Served) -> None:
    async def scenario() -> None:
        async with AsyncRagsiftClient(served.url, api_key=served.reader_key) as reader:
            with pytest.raises(NotFoundError):
                await reader.get_kb("no-such-kb")
            with pytest.raises(ForbiddenError):
                await reader.create_kb("not-for-readers")
            with pytest.raises(NotFoundError):  # raised as the stream is opened
                async with aclosing(reader.chat_stream("hi", kb="no-such-kb")) as events:
                    async for _ in events:
                        pass
        async with AsyncRagsiftClient(served.url, api_key="rs_wrong") as stranger:
            with pytest.raises(UnauthorizedError):
                await stranger.list_conversations()

    asyncio.run(scenario())
