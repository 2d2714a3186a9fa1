"""OpenAIRewriter.translate (cross-lingual queries) against the real fake-model server."""

from __future__ import annotations

import json

import pytest

from ragsift.adapters.openai_rewriter import OpenAIRewriter
from ragsift.domain.errors import UpstreamError
from ragsift.domain.stages import RewriteProposal
from support.fixtures import LLMServer


def _rewriter(server: LLMServer) -> OpenAIRewriter:
    return OpenAIRewriter(f"{server.url}/v1", "qwen-plus", timeout_s=5.0)


def _answer(server: LLMServer, method: str, text: str) -> None:
    server.control(chat={"mode": "ok", "content": json.dumps(
        {"method": method, "text": text}, ensure_ascii=False)})


def test_translate_asks_for_the_target_language_in_json_mode(llm_server: LLMServer) -> None:
    _answer(llm_server, "translation", "工作满一年有多少天年假")

    proposal = _rewriter(llm_server).translate("annual leave after one year", "zh")

    assert proposal == RewriteProposal(method="translation", text="工作满一年有多少天年假")
    body = llm_server.last("chat")["body"]
    system, user = body["messages"]
    assert "Chinese" in system["content"] and "JSON" in system["content"]
    assert "number" in system["content"]  # numbers and codes are kept verbatim
    assert user == {"role": "user", "content": "annual leave after one year"}
    assert body["response_format"] == {"type": "json_object"} and body["temperature"] == 0


def test_an_answer_labelled_as_another_rewrite_method_is_still_a_translation(
    llm_server: LLMServer,
) -> None:
    _answer(llm_server, "expand", "How many days of annual leave?")
    proposal = _rewriter(llm_server).translate("年假有几天", "en")
    assert proposal.method == "translation"
    assert "English" in llm_server.last("chat")["body"]["messages"][0]["content"]


def test_a_model_that_declines_proposes_no_translation(llm_server: LLMServer) -> None:
    _answer(llm_server, "none", "年假有几天")
    assert _rewriter(llm_server).translate("年假有几天", "en").method == "none"


def test_an_unknown_language_is_refused_before_any_request(llm_server: LLMServer) -> None:
    with pytest.raises(ValueError, match="fr"):
        _rewriter(llm_server).translate("annual leave", "fr")
    assert llm_server.last_kinds() == []


def test_a_garbage_answer_is_an_upstream_error(llm_server: LLMServer) -> None:
    llm_server.control(chat={"mode": "ok", "content": "not json"})
    with pytest.raises(UpstreamError):
        _rewriter(llm_server).translate("annual leave", "zh")
