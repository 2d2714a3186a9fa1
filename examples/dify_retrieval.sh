#!/usr/bin/env bash
# Call ragsift the way Dify's External Knowledge API does (POST {endpoint}/retrieval).
#
#   ragsift ingest samples --kb demo
#   ragsift keys create --name dify --role reader --kb demo    # prints the secret once
#   ragsift serve --host 0.0.0.0 --port 8000
#   RAGSIFT_API_KEY=rs_... examples/dify_retrieval.sh "hotel limit per night" demo
#
# In Dify: Knowledge -> External Knowledge API -> Add: endpoint http://HOST:8000/dify, API key
# the secret; then Connect to an External Knowledge Base with External Knowledge ID `demo`
# (a ragsift KB name or id).
set -euo pipefail

query=${1:-"hotel limit per night"}
kb=${2:-demo}
url=${RAGSIFT_URL:-http://127.0.0.1:8000}
: "${RAGSIFT_API_KEY:?set RAGSIFT_API_KEY to a ragsift key (ragsift keys create ...)}"

body=$(python3 -c 'import json, sys; print(json.dumps({
    "knowledge_id": sys.argv[2], "query": sys.argv[1],
    "retrieval_setting": {"top_k": 3, "score_threshold": 0.5},
}))' "$query" "$kb")
echo "== records for ${query@Q} in ${kb}"
curl -sS -X POST "$url/dify/retrieval" -H "Authorization: Bearer $RAGSIFT_API_KEY" \
     -H 'content-type: application/json' -d "$body"
echo

# a metadata condition (Dify sends these from its API): only documents of tenant acme
body=$(python3 -c 'import json, sys; print(json.dumps({
    "knowledge_id": sys.argv[2], "query": sys.argv[1],
    "retrieval_setting": {"top_k": 3, "score_threshold": 0.0},
    "metadata_condition": {"logical_operator": "and", "conditions": [
        {"name": "tenant_id", "comparison_operator": "is", "value": "acme"}]},
}))' "$query" "$kb")
echo "== the same, only documents with tenant_id acme"
curl -sS -X POST "$url/dify/retrieval" -H "Authorization: Bearer $RAGSIFT_API_KEY" \
     -H 'content-type: application/json' -d "$body"
echo

echo "== a bad key: Dify's error format"
curl -sS -X POST "$url/dify/retrieval" -H "Authorization: Bearer rs_wrong" \
     -H 'content-type: application/json' -d "$body"
echo
