"""Retrieval testing over HTTP (issue 38), on a live app with API keys on. The query history:
`explain?history=true` records the query, its options, top hits with their final scores, the
server's time and the key; the list keeps the newest RAGSIFT_QUERY_HISTORY_LIMIT per KB; a key
without access to the KB can neither read nor clear it. The evaluation view: per-mode metrics
with paired-bootstrap intervals on uploaded labels and on the KB's feedback, refused (with the
CLI command) above RAGSIFT_WEB_EVAL_MAX_QUERIES; a labels file saved as a named set of the KB
is scored again by its id, bounded in size and number, and scoped like the KB."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from api.api_helpers import Api, assert_error
from api.auth_helpers import as_key, new_key
from api.conftest import open_api
from ragsift.auth.keys import Role

KEEP = 3
MAX_EVAL = 3
MAX_SETS = 2
MAX_SET_BYTES = 2000
IT_DOC = (b"# IT\n\nReset the router by holding its button for ten seconds.\n\n"
          b"## Laptops\n\nLaptops are replaced every four years.\n")
DOC = (b"# Travel\n\nThe hotel limit is 150 dollars per night in most cities.\n\n"
       b"## Meals\n\nMeals are refunded against itemised receipts within 30 days.\n")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with open_api(tmp_path_factory.mktemp("query_history") / "data", auth=True,
                  query_history_limit=KEEP, web_eval_max_queries=MAX_EVAL,
                  web_eval_max_sets=MAX_SETS, web_eval_set_max_bytes=MAX_SET_BYTES) as started:
        admin = new_key(started, "admin", Role.ADMIN)
        started.client.headers["Authorization"] = f"Bearer {admin}"
        yield started


@pytest.fixture(scope="module")
def kbs(api: Api) -> dict[str, str]:
    found = {name: api.create_kb(name) for name in ("travel", "other")}
    api.ingest(found["travel"], {"travel.md": DOC, "it.md": IT_DOC})
    return found


def explain(api: Api, kb_id: str, query: str, history: bool = True, key: str | None = None,
            **options: Any) -> dict[str, Any]:
    body = {"kb_id": kb_id, "query": query, "rerank": False, **options}
    path = "/api/retrieval/explain" + ("?history=true" if history else "")
    response = (as_key(api, key, "POST", path, json=body) if key
                else api.client.post(path, json=body))
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def history(api: Api, kb_id: str, **params: Any) -> dict[str, Any]:
    response = api.client.get(f"/api/kbs/{kb_id}/queries", params=params)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


def test_a_recorded_explain_keeps_query_options_hits_latency_and_key(
    api: Api, kbs: dict[str, str]
) -> None:
    kb_id = kbs["travel"]
    api.client.delete(f"/api/kbs/{kb_id}/queries")
    reader = new_key(api, "tester", Role.READER, kb_ids=[kb_id])
    explain(api, kb_id, "meals receipts", history=False)  # not recorded
    out = explain(api, kb_id, "hotel limit per night", key=reader, mode="sparse", top_k=2)

    page = history(api, kb_id)

    assert page["total"] == 1 and page["keep"] == KEEP
    [item] = page["items"]
    assert item["query"] == "hotel limit per night"
    assert item["options"]["mode"] == "sparse" and item["options"]["top_k"] == 2
    assert item["options"]["rerank"] is False and "query" not in item["options"]
    assert [(h["chunk_id"], h["score"]) for h in item["hits"]] == [
        (h["chunk_id"], h["fusion_score"]) for h in out["results"]]
    assert item["hits"]  # the query matches the document
    assert item["latency_ms"] == pytest.approx(out["trace"]["timings_ms"]["total"], abs=1e-3)
    assert item["key_name"] == "tester"
    assert item["created_at"]


def test_the_history_keeps_the_newest_queries_up_to_the_limit(
    api: Api, kbs: dict[str, str]
) -> None:
    kb_id = kbs["travel"]
    for n in range(KEEP + 2):
        explain(api, kb_id, f"hotel query {n}", mode="sparse")

    page = history(api, kb_id)
    assert page["total"] == KEEP
    assert [i["query"] for i in page["items"]] == [f"hotel query {n}"
                                                   for n in (4, 3, 2)]
    assert [i["query"] for i in history(api, kb_id, limit=1)["items"]] == ["hotel query 4"]
    assert history(api, kbs["other"])["total"] == 0  # per KB


def test_a_key_without_the_kb_cannot_read_or_clear_its_history(
    api: Api, kbs: dict[str, str]
) -> None:
    kb_id = kbs["travel"]
    explain(api, kb_id, "hotel", mode="sparse")
    outsider = new_key(api, "outsider", Role.EDITOR, kb_ids=[kbs["other"]])
    reader = new_key(api, "reader", Role.READER, kb_ids=[kb_id])
    editor = new_key(api, "editor", Role.EDITOR, kb_ids=[kb_id])

    assert_error(as_key(api, outsider, "GET", f"/api/kbs/{kb_id}/queries"), 403, "forbidden")
    assert_error(as_key(api, outsider, "DELETE", f"/api/kbs/{kb_id}/queries"), 403,
                 "forbidden")
    assert as_key(api, reader, "GET", f"/api/kbs/{kb_id}/queries").status_code == 200
    assert_error(as_key(api, reader, "DELETE", f"/api/kbs/{kb_id}/queries"), 403, "forbidden")
    cleared = as_key(api, editor, "DELETE", f"/api/kbs/{kb_id}/queries")
    assert cleared.status_code == 200 and cleared.json()["deleted"] >= 1
    assert history(api, kb_id)["total"] == 0


def test_history_of_a_search_over_several_kbs_or_an_unknown_kb_is_refused(
    api: Api, kbs: dict[str, str]
) -> None:
    response = api.client.post("/api/retrieval/explain?history=true", json={
        "kbs": [kbs["travel"], kbs["other"]], "query": "hotel", "mode": "sparse"})
    assert_error(response, 400, "invalid_input")
    assert_error(api.client.get("/api/kbs/nope/queries"), 404, "not_found")


def evaluate(api: Api, kb_id: str, **body: Any) -> dict[str, Any]:
    response = api.client.post(f"/api/kbs/{kb_id}/evaluation", json=body)
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


LABELS = "\n".join(json.dumps(line) for line in (
    {"query": "hotel limit per night", "relevant": ["travel.md"]},
    {"query": "how do I reset the router", "relevant": ["it.md"]},
)) + "\n"


def test_evaluation_of_uploaded_labels_gives_metrics_per_mode_with_intervals(
    api: Api, kbs: dict[str, str]
) -> None:
    out = evaluate(api, kbs["travel"], feedback=False, labels=LABELS, k=5)

    assert out["ran"] and out["queries"] == out["uploaded_queries"] == 2
    assert [m["mode"] for m in out["modes"]] == ["hybrid", "dense", "sparse"]
    for mode in out["modes"]:
        assert mode["queries_scored"] == 2
        assert set(mode["metrics"]) == {"ndcg", "mrr", "recall", "precision"}
        # two documents, each query names the one that answers it: found first by each mode
        assert mode["metrics"]["recall"] == 1.0 and mode["metrics"]["mrr"] == 1.0
    hybrid, dense, _ = out["modes"]
    assert hybrid["intervals"] is None
    ndcg = dense["intervals"]["ndcg"]
    assert ndcg["queries"] == 2 and ndcg["low"] <= ndcg["mean"] <= ndcg["high"]
    assert ndcg["mean"] == pytest.approx(dense["metrics"]["ndcg"] - hybrid["metrics"]["ndcg"],
                                         abs=1e-5)


def test_evaluation_of_the_kb_feedback_scores_the_rated_answers(
    api: Api, kbs: dict[str, str]
) -> None:
    kb_id = kbs["travel"]
    turn = api.client.post("/api/chat", json={"kb_id": kb_id,
                                              "message": "What is the hotel limit per night?"})
    assert turn.status_code == 200, turn.text
    answer = turn.json()
    assert answer["citations"], answer  # an extractive answer cites its evidence
    rated = api.client.post(f"/api/conversations/{answer['conversation_id']}/turns/"
                            f"{answer['turn_id']}/feedback", json={"rating": "up"})
    assert rated.status_code == 200, rated.text

    out = evaluate(api, kb_id)

    assert out["ran"] and out["feedback_queries"] == 1 and out["uploaded_queries"] == 0
    hybrid = out["modes"][0]
    assert hybrid["queries_scored"] == 1 and hybrid["chunk_metrics"]


def test_evaluation_above_the_bound_is_not_run_and_bad_labels_are_named(
    api: Api, kbs: dict[str, str]
) -> None:
    kb_id = kbs["travel"]
    many = LABELS * 2  # four queries, over MAX_EVAL
    many = "\n".join(json.dumps({**json.loads(line), "id": f"q{n}"})
                      for n, line in enumerate(many.split("\n")) if line)
    out = evaluate(api, kb_id, feedback=False, labels=many)
    assert not out["ran"] and out["queries"] == 4 and out["max_queries"] == MAX_EVAL
    assert out["modes"] == []
    assert out["command"].startswith("ragsift eval --kb travel ")

    bad = api.client.post(f"/api/kbs/{kb_id}/evaluation",
                          json={"feedback": False, "labels": '{"query": "x"}\nnot json\n'})
    assert "line 2" in assert_error(bad, 400, "invalid_input")["message"]
    unknown = api.client.post(f"/api/kbs/{kb_id}/evaluation", json={
        "feedback": False, "labels": json.dumps({"query": "x", "relevant": ["nope.md"]})})
    message = assert_error(unknown, 400, "invalid_input")["message"]
    assert "nope.md" in message and "/tmp" not in message
    none = api.client.post(f"/api/kbs/{kb_id}/evaluation", json={"feedback": False})
    assert_error(none, 400, "invalid_input")


def sets(api: Api, kb_id: str) -> dict[str, Any]:
    response = api.client.get(f"/api/kbs/{kb_id}/labelled-sets")
    assert response.status_code == 200, response.text
    out: dict[str, Any] = response.json()
    return out


def test_a_saved_labelled_set_is_listed_scored_by_its_id_and_deleted(
    api: Api, kbs: dict[str, str]
) -> None:
    kb_id = kbs["travel"]
    saved = api.client.post(f"/api/kbs/{kb_id}/labelled-sets",
                            json={"name": " travel and IT ", "labels": LABELS})
    assert saved.status_code == 201, saved.text
    entry = saved.json()
    assert entry["name"] == "travel and IT" and entry["queries"] == 2
    assert entry["size_bytes"] == len(LABELS.encode()) and entry["key_name"] == "admin"
    listed = sets(api, kb_id)
    assert listed["max_sets"] == MAX_SETS and listed["max_bytes"] == MAX_SET_BYTES
    assert [i["id"] for i in listed["items"]] == [entry["id"]]
    assert sets(api, kbs["other"])["items"] == []  # per KB

    stored = evaluate(api, kb_id, feedback=False, set_id=entry["id"], k=5)
    uploaded = evaluate(api, kb_id, feedback=False, labels=LABELS, k=5)
    assert stored["ran"] and stored["labelled_set"] == "travel and IT"
    assert stored["uploaded_queries"] == 2
    assert [m["metrics"] for m in stored["modes"]] == [m["metrics"] for m in uploaded["modes"]]

    other_kb = api.client.post(f"/api/kbs/{kbs['other']}/evaluation",
                               json={"feedback": False, "set_id": entry["id"]})
    assert_error(other_kb, 404, "not_found")  # a set is scored only with its own KB
    gone = api.client.delete(f"/api/kbs/{kb_id}/labelled-sets/{entry['id']}")
    assert gone.status_code == 204, gone.text
    assert sets(api, kb_id)["items"] == []
    again = api.client.post(f"/api/kbs/{kb_id}/evaluation",
                            json={"feedback": False, "set_id": entry["id"]})
    assert_error(again, 404, "not_found")
    assert_error(api.client.delete(f"/api/kbs/{kb_id}/labelled-sets/{entry['id']}"), 404,
                 "not_found")


def test_labelled_sets_are_bounded_named_once_checked_and_scoped_like_the_kb(
    api: Api, kbs: dict[str, str]
) -> None:
    kb_id = kbs["other"]
    path = f"/api/kbs/{kb_id}/labelled-sets"

    def save(name: str, labels: str = LABELS, key: str | None = None) -> Any:
        body = {"name": name, "labels": labels}
        return as_key(api, key, "POST", path, json=body) if key else api.client.post(
            path, json=body)

    assert save("a").status_code == 201
    assert_error(save("a"), 409, "labelled_set_exists")
    assert save("b").status_code == 201
    full = assert_error(save("c"), 409, "too_many_labelled_sets")
    assert "RAGSIFT_WEB_EVAL_MAX_SETS=2" in full["message"]
    big = assert_error(save("big", LABELS * 40), 400, "invalid_input")
    assert "RAGSIFT_WEB_EVAL_SET_MAX_BYTES" in big["message"]
    bad = assert_error(save("bad", '{"query": "x"}\nnot json\n'), 400, "invalid_input")
    assert "line 2" in bad["message"]
    assert_error(save("   "), 400, "invalid_input")

    reader = new_key(api, "sets-reader", Role.READER, kb_ids=[kb_id])
    outsider = new_key(api, "sets-outsider", Role.EDITOR, kb_ids=[kbs["travel"]])
    assert as_key(api, reader, "GET", path).status_code == 200
    assert_error(save("r", key=reader), 403, "forbidden")
    assert_error(as_key(api, outsider, "GET", path), 403, "forbidden")
    first = sets(api, kb_id)["items"][0]["id"]
    assert_error(as_key(api, outsider, "DELETE", f"{path}/{first}"), 403, "forbidden")
    assert [i["name"] for i in sets(api, kb_id)["items"]] == ["a", "b"]
