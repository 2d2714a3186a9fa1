"""On /dify/ and /v1/ every error answers in Dify's or OpenAI's format, also those a middleware
makes before any route runs (a body over the limit, an unknown path); elsewhere ragsift's."""

from __future__ import annotations

from api.conftest import ApiFactory
from ragsift.api.compat_errors import dify_error, openai_error

DIFY_BODY = {"knowledge_id": "docs", "query": "q",
             "retrieval_setting": {"top_k": 1, "score_threshold": 0.0}}
CHAT_BODY = {"model": "kb:docs", "messages": [{"role": "user", "content": "q"}]}


def test_a_body_over_the_limit_is_refused_in_each_apis_format(make_api: ApiFactory) -> None:
    api = make_api(max_json_bytes=64)
    padding = "x" * 200

    dify = api.client.post("/dify/retrieval", json={**DIFY_BODY, "query": padding})
    chat = api.client.post("/v1/chat/completions", json={**CHAT_BODY, "model": padding})
    own = api.client.post("/api/retrieval/search", json={"kb": "docs", "query": padding})

    assert dify.status_code == 413
    assert dify.json()["error_code"] == 3001 and "64 bytes" in dify.json()["error_msg"]
    assert chat.status_code == 413
    assert chat.json()["error"]["code"] == "request_too_large"
    assert chat.json()["error"]["type"] == "invalid_request_error"
    assert int(chat.headers["content-length"]) == len(chat.content)
    assert own.status_code == 413 and own.json()["code"] == "request_too_large"


def test_an_unknown_path_under_a_prefix_answers_in_that_apis_format(
    make_api: ApiFactory,
) -> None:
    api = make_api()

    missing = api.client.post("/v1/images/generations", json={"prompt": "x"})
    wrong_method = api.client.get("/dify/retrieval")

    assert missing.status_code == 404
    assert set(missing.json()["error"]) == {"message", "type", "param", "code"}
    assert wrong_method.status_code == 405
    assert wrong_method.json()["error_code"] == 3001


def test_dify_auth_refusals_are_403_with_1001_for_the_header_and_1002_for_the_key() -> None:
    assert dify_error(401, "unauthorized", "m", None) == (
        403, {"error_code": 1001, "error_msg": "m"})
    assert dify_error(401, "unauthorized", "m", "Token abc")[1]["error_code"] == 1001
    assert dify_error(401, "unauthorized", "m", "Bearer  abc")[1]["error_code"] == 1001
    assert dify_error(401, "unauthorized", "m", "bearer rs_x")[1]["error_code"] == 1002
    assert dify_error(403, "forbidden", "m", "Bearer rs_x") == (
        403, {"error_code": 1002, "error_msg": "m"})
    assert dify_error(429, "rate_limited", "m", None)[0:2] == (
        429, {"error_code": 4001, "error_msg": "m"})
    assert dify_error(503, "overloaded", "m", None)[1]["error_code"] == 4001
    assert dify_error(503, "retrieval_unavailable", "m", None)[1]["error_code"] == 5001
    assert dify_error(422, "invalid_request", "m", None)[0] == 400


def test_openai_errors_carry_openais_types_and_ragsifts_code() -> None:
    assert openai_error(422, "invalid_request", "m", None) == (400, {"error": {
        "message": "m", "type": "invalid_request_error", "param": None,
        "code": "invalid_request"}})
    assert [openai_error(status, "c", "m", None)[1]["error"]["type"]
            for status in (401, 403, 404, 429, 502)] == [
        "authentication_error", "permission_error", "invalid_request_error",
        "rate_limit_error", "server_error"]
