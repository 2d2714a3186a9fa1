"""The server's `{"code", "message"}` errors come back as one exception class per kind."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from client.client_helpers import MAX_FILE_BYTES, Handbook, Served
from ragsift.client import (
    AsyncRagsiftClient,
    AuthError,
    ClientValidationError,
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    NotFoundError,
    RagsiftApiError,
    RagsiftClient,
    RagsiftConnectionError,
    UnauthorizedError,
    WaitTimeoutError,
)
from support.serve import free_port


def test_an_unknown_document_is_not_found_with_the_servers_code_and_message(
    admin: RagsiftClient,
) -> None:
    with pytest.raises(NotFoundError) as raised:
        admin.get_document("no-such-document")

    assert isinstance(raised.value, RagsiftApiError)
    assert (raised.value.status, raised.value.code) == (404, "not_found")
    assert "no-such-document" in raised.value.message


def test_a_bad_key_and_no_key_are_unauthorized(served: Served) -> None:
    for api_key in ("rs_not-a-real-key", None):
        with RagsiftClient(served.url, api_key=api_key) as client, \
                pytest.raises(UnauthorizedError) as raised:
            client.list_kbs()
        assert isinstance(raised.value, AuthError)
        assert (raised.value.status, raised.value.code) == (401, "unauthorized")


def test_a_reader_creating_a_knowledge_base_is_forbidden(reader: RagsiftClient) -> None:
    with pytest.raises(ForbiddenError) as raised:
        reader.create_kb("not-for-readers")

    assert isinstance(raised.value, AuthError)
    assert (raised.value.status, raised.value.code) == (403, "forbidden")
    assert "reader" in raised.value.message


def test_another_keys_conversation_is_not_found(
    admin: RagsiftClient, reader: RagsiftClient, handbook: Handbook,
) -> None:
    mine = admin.chat("hotel limit?", kb_id=handbook.kb.id)

    with pytest.raises(NotFoundError):
        reader.get_conversation(mine.conversation_id)
    with pytest.raises(NotFoundError):
        reader.chat("and in London?", kb_id=handbook.kb.id, conversation_id=mine.conversation_id)


def test_a_taken_name_is_a_conflict(admin: RagsiftClient, handbook: Handbook) -> None:
    with pytest.raises(ConflictError) as raised:
        admin.create_kb(handbook.kb.name)

    assert (raised.value.status, raised.value.code) == (409, "kb_exists")


def test_bad_uploads_are_invalid_requests_and_not_sent_again(admin: RagsiftClient) -> None:
    kb = admin.create_kb("bad-uploads")
    started = time.monotonic()
    with pytest.raises(InvalidRequestError) as unsupported:
        admin.upload_document(kb.id, ("notes.xyz", b"plain words"))
    # refused while the body streams, before the rest is read
    with pytest.raises(InvalidRequestError) as too_large:
        admin.upload_document(kb.id, ("big.txt", b"a" * (4 * MAX_FILE_BYTES)))

    assert unsupported.value.status == 415
    assert too_large.value.status == 413 and too_large.value.code == "file_too_large"
    assert time.monotonic() - started < 5  # no backoff: a 4xx is final
    assert admin.list_documents(kb.id) == []


def test_a_request_the_api_would_refuse_is_an_api_error_raised_before_sending() -> None:
    # nothing listens there: a request that went out would be a RagsiftConnectionError
    with RagsiftClient(f"http://127.0.0.1:{free_port()}", retries=0) as client:
        refusals = [_refusal(lambda: client.search("hotel", kb="handbook", top_k=0)),
                    _refusal(lambda: client.search("hotel", kb="handbook", not_an_option=True)),
                    _refusal(lambda: client.chat("hotel", kb="handbook", kb_id="both")),
                    _refusal(lambda: client.create_kb("")),
                    _refusal(lambda: client.list_documents("kb-1", status="bogus")),
                    _refusal(lambda: client.get_document(""))]

    for error in refusals:
        assert isinstance(error, InvalidRequestError) and isinstance(error, RagsiftApiError)
        assert isinstance(error, ValueError)  # as pydantic's ValidationError was
        assert (error.status, error.code) == (422, "invalid_request")
        assert str(error) == f"invalid request, not sent: {error.message}"
    assert refusals[0].message == "top_k: Input should be greater than or equal to 1"
    assert refusals[0].errors[0]["loc"] == ("top_k",)
    assert refusals[1].message == "not_an_option: Extra inputs are not permitted"
    assert "give exactly one of kb_id, kb and kbs" in refusals[2].message
    assert refusals[3].message.startswith("name: ")
    assert refusals[4].message.startswith("status: 'bogus' is not one of PENDING")
    assert refusals[5].message == "an id must not be empty"


def test_the_async_client_refuses_a_bad_option_the_same_way() -> None:
    async def search() -> None:
        async with AsyncRagsiftClient(f"http://127.0.0.1:{free_port()}", retries=0) as client:
            await client.search("hotel", kb="handbook", top_k=0)

    with pytest.raises(ClientValidationError, match="top_k: Input should be greater"):
        asyncio.run(search())


def _refusal(call: Callable[[], object]) -> ClientValidationError:
    with pytest.raises(ClientValidationError) as refused:
        call()
    return refused.value


def test_an_unreachable_server_is_a_connection_error_after_the_retries() -> None:
    with RagsiftClient(f"http://127.0.0.1:{free_port()}", retries=1) as client, \
            pytest.raises(RagsiftConnectionError, match="ConnectError"):
        client.list_kbs()


def test_waiting_past_the_timeout_names_the_documents_still_on_their_way(
    admin: RagsiftClient,
) -> None:
    kb = admin.create_kb("slow-wait")
    # enough text that its embedding is still running when the first poll comes back
    text = "".join(f"Paragraph {n}: the hotel limit in city {n} is {n} dollars.\n\n"
                   for n in range(100))
    uploaded = admin.upload_document(kb.id, ("cities.md", text.encode()))

    with pytest.raises(WaitTimeoutError) as raised:
        admin.wait_until_ready(uploaded, timeout=0)

    assert uploaded.id in raised.value.pending
    assert isinstance(raised.value, TimeoutError)
