"""FAQ over HTTP: import (with a default scope), FAQ hits in explain within the request's
scope, listing, reading, updating and deleting entries, roles and key scopes."""

from __future__ import annotations

import json
from typing import Any

from api.api_helpers import Api, assert_error
from api.auth_helpers import as_key, make_keys, new_key
from api.conftest import ApiFactory
from ragsift.auth.keys import Role

FAQ = "\n".join(json.dumps(row, ensure_ascii=False) for row in [
    {"question": "年假有几天？", "answer": "每年十五天带薪年假。", "source": "HR"},
    {"question": "How do I reset the router?", "answer": "Hold the reset button for 10 s."},
]).encode()


def test_faq_entries_are_imported_once_and_found_by_explain(api: Api) -> None:
    kb_id = api.create_kb()

    first = api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.jsonl", FAQ)})
    again = api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.jsonl", FAQ)})

    assert first.status_code == 200 and first.json() == {"rows": 2, "added": 2, "duplicates": 0}
    assert again.json() == {"rows": 2, "added": 0, "duplicates": 2}
    assert api.client.get(f"/api/kbs/{kb_id}").json()["faq"] == 2
    explained = api.client.post("/api/retrieval/explain",
                                json={"kb_id": kb_id, "query": "年假有几天？"}).json()
    assert explained["faq"][0]["question"] == "年假有几天？"
    assert explained["faq"][0]["direct_answer"] is True
    assert explained["results"] == []


def test_a_csv_file_is_imported(api: Api) -> None:
    kb_id = api.create_kb()
    csv = b"question,answer\nWhere is the office?,Berlin\n"
    response = api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.csv", csv)})
    assert response.json() == {"rows": 1, "added": 1, "duplicates": 0}


def test_a_malformed_faq_file_stores_nothing_and_names_the_line(api: Api) -> None:
    kb_id = api.create_kb()
    bad = FAQ + b'\n{"question": "no answer"}\n'
    response = api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.jsonl", bad)})
    body = assert_error(response, 400, "invalid_input")
    assert "line 3" in body["message"]
    assert api.client.get(f"/api/kbs/{kb_id}").json()["faq"] == 0


def test_faq_import_rejects_other_types_unknown_kbs_and_several_files(api: Api) -> None:
    kb_id = api.create_kb()
    wrong_type = api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.xlsx", b"x")})
    assert_error(wrong_type, 415, "unsupported_media_type")
    unknown = api.client.post("/api/kbs/nope/faq", files={"file": ("faq.jsonl", FAQ)})
    assert_error(unknown, 404, "not_found")
    two_files = api.client.post(f"/api/kbs/{kb_id}/faq", files=[
        ("file", ("a.jsonl", FAQ)), ("file", ("b.jsonl", FAQ))])
    assert_error(two_files, 413, "too_many_files")


# ---- scope, management, access --------------------------------------------------------------

SCOPED = "\n".join(json.dumps(row, ensure_ascii=False) for row in [
    {"question": "How many days of annual leave?", "answer": "Fifteen days.",
     "tenant_id": "acme", "allowed_roles": ["hr"]},
    {"question": "Where is the office?", "answer": "Berlin.", "tenant_id": "globex"},
    {"question": "What is the wifi password?", "answer": "Ask IT."},
]).encode()


def _entries(api: Api, kb_id: str, **params: Any) -> dict[str, Any]:
    response = api.client.get(f"/api/kbs/{kb_id}/faq", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _by_question(api: Api, kb_id: str) -> dict[str, dict[str, Any]]:
    return {e["question"]: e for e in _entries(api, kb_id, limit=500)["entries"]}


def _faq_questions(api: Api, kb_id: str, query: str, **scope: Any) -> list[str]:
    body = {"kb_id": kb_id, "query": query, "run_doc": False, **scope}
    response = api.client.post("/api/retrieval/explain", json=body)
    assert response.status_code == 200, response.text
    return [hit["question"] for hit in response.json()["faq"]]


def test_import_form_fields_are_the_default_scope_and_rows_override_them(api: Api) -> None:
    kb_id = api.create_kb()
    response = api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.jsonl", SCOPED)},
                               data={"tenant_id": "initech", "visibility": "internal",
                                     "allowed_roles": "eng, ops", "source": "wiki"})
    assert response.json() == {"rows": 3, "added": 3, "duplicates": 0}
    entries = _by_question(api, kb_id)
    leave = entries["How many days of annual leave?"]
    assert (leave["tenant_id"], leave["visibility"], leave["allowed_roles"], leave["source"]) == (
        "acme", "internal", ["hr"], "wiki")
    wifi = entries["What is the wifi password?"]
    assert (wifi["tenant_id"], wifi["allowed_roles"]) == ("initech", ["eng", "ops"])
    assert (wifi["valid_from_seq"], wifi["valid_to_seq"]) == (1, 0)


def test_faq_search_applies_the_requests_scope(api: Api) -> None:
    kb_id = api.create_kb()
    api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.jsonl", SCOPED)})
    question = "annual leave office wifi"
    # naming no role is having none: the hr-only entry is left out
    assert set(_faq_questions(api, kb_id, question)) == {
        "Where is the office?", "What is the wifi password?"}
    assert len(_faq_questions(api, kb_id, question, roles=["hr"])) == 3
    # tenant t2 with no roles used to get every entry; now only what its scope holds
    assert _faq_questions(api, kb_id, question, tenant_ids=["t2"], roles=[]) == []
    assert _faq_questions(api, kb_id, question, tenant_ids=["acme"], roles=["hr"]) == [
        "How many days of annual leave?"]
    assert _faq_questions(api, kb_id, question, tenant_ids=["acme"], roles=[]) == []
    assert set(_faq_questions(api, kb_id, question, roles=[])) == {
        "Where is the office?", "What is the wifi password?"}


def test_the_list_is_paged_oldest_first_with_a_total(api: Api) -> None:
    kb_id = api.create_kb()
    rows = "\n".join(json.dumps({"question": f"Question {i}?", "answer": f"Answer {i}."})
                     for i in range(5)).encode()
    api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.jsonl", rows)})
    page = _entries(api, kb_id, offset=1, limit=2)
    assert (page["total"], page["offset"], page["limit"]) == (5, 1, 2)
    assert [e["question"] for e in page["entries"]] == ["Question 1?", "Question 2?"]
    assert _entries(api, kb_id, offset=5)["entries"] == []
    too_many = api.client.get(f"/api/kbs/{kb_id}/faq", params={"limit": 501})
    assert too_many.status_code == 422
    assert_error(api.client.get("/api/kbs/nope/faq"), 404, "not_found")


def test_an_entry_is_read_updated_with_a_new_id_and_deleted(api: Api) -> None:
    kb_id = api.create_kb()
    assert api.client.put(f"/api/kbs/{kb_id}/versions/config",
                          json={"retention": 2}).status_code == 200
    api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.jsonl", FAQ)})
    old = _by_question(api, kb_id)["How do I reset the router?"]
    got = api.client.get(f"/api/kbs/{kb_id}/faq/{old['id']}")
    assert got.status_code == 200 and got.json() == old

    patched = api.client.patch(f"/api/kbs/{kb_id}/faq/{old['id']}", json={
        "answer": "Hold the reset button for 30 s.", "tenant_id": "acme", "source": None})
    assert patched.status_code == 200, patched.text
    new = patched.json()
    assert new["id"] != old["id"]
    assert (new["question"], new["answer"], new["tenant_id"], new["source"]) == (
        "How do I reset the router?", "Hold the reset button for 30 s.", "acme", None)
    assert new["valid_from_seq"] == old["valid_from_seq"] + 1
    # the old id is retired: readable, no longer listed or searched, not updatable
    assert api.client.get(f"/api/kbs/{kb_id}/faq/{old['id']}").json()["valid_to_seq"] == (
        new["valid_from_seq"])
    assert old["id"] not in {e["id"] for e in _entries(api, kb_id)["entries"]}
    assert_error(api.client.patch(f"/api/kbs/{kb_id}/faq/{old['id']}", json={"answer": "x"}),
                 404, "not_found")
    explained = api.client.post("/api/retrieval/explain", json={
        "kb_id": kb_id, "query": "How do I reset the router?"}).json()
    assert explained["faq"][0]["answer"] == "Hold the reset button for 30 s."
    before = api.client.post("/api/retrieval/explain", json={
        "kb_id": kb_id, "query": "How do I reset the router?",
        "kb_version": old["valid_from_seq"]}).json()
    assert before["faq"][0]["answer"] == "Hold the reset button for 10 s."

    assert api.client.delete(f"/api/kbs/{kb_id}/faq/{new['id']}").status_code == 204
    assert _entries(api, kb_id)["total"] == 1
    assert_error(api.client.delete(f"/api/kbs/{kb_id}/faq/{new['id']}"), 404, "not_found")
    assert api.client.get(f"/api/kbs/{kb_id}").json()["faq"] == 1


def test_updates_that_change_nothing_clash_or_are_invalid(api: Api) -> None:
    kb_id = api.create_kb()
    api.client.post(f"/api/kbs/{kb_id}/faq", files={"file": ("faq.jsonl", FAQ)})
    entries = _by_question(api, kb_id)
    router = entries["How do I reset the router?"]
    same = api.client.patch(f"/api/kbs/{kb_id}/faq/{router['id']}", json={})
    assert same.status_code == 200 and same.json() == router
    clash = api.client.patch(f"/api/kbs/{kb_id}/faq/{router['id']}", json={
        "question": "年假有几天？", "answer": "每年十五天带薪年假。"})
    assert_error(clash, 409, "faq_conflict")
    assert_error(api.client.patch(f"/api/kbs/{kb_id}/faq/{router['id']}",
                                  json={"question": None}), 400, "invalid_input")
    assert api.client.patch(f"/api/kbs/{kb_id}/faq/{router['id']}",
                            json={"colour": "red"}).status_code == 422
    assert_error(api.client.get(f"/api/kbs/{kb_id}/faq/nope"), 404, "not_found")
    other = api.create_kb("other")
    assert_error(api.client.get(f"/api/kbs/{other}/faq/{router['id']}"), 404, "not_found")


def test_readers_read_the_faq_and_editors_change_it(make_api: ApiFactory) -> None:
    secured = make_api(auth=True)
    keys = make_keys(secured)
    kb_id = as_key(secured, keys.admin, "POST", "/api/kbs", json={"name": "docs"}).json()["id"]
    imported = as_key(secured, keys.editor, "POST", f"/api/kbs/{kb_id}/faq",
                      files={"file": ("faq.jsonl", FAQ)})
    assert imported.status_code == 200
    listed = as_key(secured, keys.reader, "GET", f"/api/kbs/{kb_id}/faq")
    assert listed.status_code == 200 and listed.json()["total"] == 2
    faq_id = listed.json()["entries"][0]["id"]
    path = f"/api/kbs/{kb_id}/faq/{faq_id}"
    assert as_key(secured, keys.reader, "GET", path).status_code == 200
    assert as_key(secured, keys.reader, "PATCH", path, json={"answer": "x"}).status_code == 403
    assert as_key(secured, keys.reader, "DELETE", path).status_code == 403
    assert as_key(secured, keys.editor, "PATCH", path, json={"answer": "x"}).status_code == 200
    spec = secured.client.get("/openapi.json").json()["paths"]
    assert spec["/api/kbs/{kb_id}/faq"]["get"]["x-required-role"] == "reader"
    assert spec["/api/kbs/{kb_id}/faq/{faq_id}"]["get"]["x-required-role"] == "reader"
    assert spec["/api/kbs/{kb_id}/faq/{faq_id}"]["patch"]["x-required-role"] == "editor"
    assert spec["/api/kbs/{kb_id}/faq/{faq_id}"]["delete"]["x-required-role"] == "editor"


def test_a_keys_scope_bounds_what_it_lists_reads_searches_and_writes(
    make_api: ApiFactory,
) -> None:
    secured = make_api(auth=True)
    admin = make_keys(secured).admin
    kb_id = as_key(secured, admin, "POST", "/api/kbs", json={"name": "docs"}).json()["id"]
    as_key(secured, admin, "POST", f"/api/kbs/{kb_id}/faq",
           files={"file": ("faq.jsonl", SCOPED)})
    ids = {e["question"]: e["id"] for e in as_key(
        secured, admin, "GET", f"/api/kbs/{kb_id}/faq").json()["entries"]}
    acme = new_key(secured, "acme-editor", Role.EDITOR, tenant_ids=("acme",),
                   data_roles=("hr",))
    listed = as_key(secured, acme, "GET", f"/api/kbs/{kb_id}/faq").json()
    assert [e["question"] for e in listed["entries"]] == ["How many days of annual leave?"]
    assert listed["total"] == 1
    office = f"/api/kbs/{kb_id}/faq/{ids['Where is the office?']}"
    assert_error(as_key(secured, acme, "GET", office), 404, "not_found")
    assert_error(as_key(secured, acme, "DELETE", office), 404, "not_found")
    explained = as_key(secured, acme, "POST", "/api/retrieval/explain", json={
        "kb_id": kb_id, "query": "annual leave office wifi", "run_doc": False}).json()
    assert [h["question"] for h in explained["faq"]] == ["How many days of annual leave?"]
    # it writes only what it could read back: not unscoped, not another tenant's
    unscoped = as_key(secured, acme, "POST", f"/api/kbs/{kb_id}/faq",
                      files={"file": ("faq.jsonl", FAQ)})
    assert_error(unscoped, 403, "forbidden")
    scoped = as_key(secured, acme, "POST", f"/api/kbs/{kb_id}/faq",
                    files={"file": ("faq.jsonl", FAQ)}, data={"tenant_id": "acme"})
    assert scoped.json()["added"] == 2
    leave = f"/api/kbs/{kb_id}/faq/{ids['How many days of annual leave?']}"
    moved = as_key(secured, acme, "PATCH", leave, json={"tenant_id": "globex"})
    assert_error(moved, 403, "forbidden")
    assert as_key(secured, acme, "PATCH", leave, json={"answer": "Twenty days."}
                  ).status_code == 200
