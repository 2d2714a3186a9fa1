"""FAQ import over HTTP, and FAQ hits in explain."""

from __future__ import annotations

import json

from api.api_helpers import Api, assert_error

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
