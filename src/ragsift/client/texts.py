"""The calls of the texts-by-key routes (POST/GET/DELETE /api/kbs/{kb_id}/texts): plain-text
documents under the caller's own keys, as vector stores use them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx
from pydantic import TypeAdapter

from ragsift.api.schemas import UploadedDocument, UploadOut
from ragsift.api.schemas_texts import DeletedOut, TextOut, TextsBody
from ragsift.client.calls import Call, _body, _segment, _validated

_texts = TypeAdapter(list[TextOut])


def _uploaded(response: httpx.Response) -> list[UploadedDocument]:
    return UploadOut.model_validate_json(response.content).documents


def write_texts(kb_id: str, texts: Sequence[Mapping[str, Any]]) -> Call[list[UploadedDocument]]:
    """`texts`: {"key", "text", "metadata"} each; a key written again is replaced."""
    body = _validated(TextsBody, {"texts": list(texts)})
    # writing the same texts twice leaves the same documents: safe to retry
    return Call("POST", f"/api/kbs/{_segment(kb_id)}/texts", _uploaded, json=_body(body),
                idempotent=True)


def _keys(keys: Sequence[str]) -> dict[str, str | list[str]]:
    return {"id": list(keys)}  # `?id=a&id=b` ("key" in a URL reads as an API key)


def read_texts(kb_id: str, keys: Sequence[str]) -> Call[list[TextOut]]:
    return Call("GET", f"/api/kbs/{_segment(kb_id)}/texts",
                lambda r: _texts.validate_json(r.content), params=_keys(keys), idempotent=True)


def delete_texts(kb_id: str, keys: Sequence[str]) -> Call[list[str]]:
    return Call("DELETE", f"/api/kbs/{_segment(kb_id)}/texts",
                lambda r: DeletedOut.model_validate_json(r.content).deleted,
                params=_keys(keys), idempotent=True)
