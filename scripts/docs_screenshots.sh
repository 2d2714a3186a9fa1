#!/usr/bin/env bash
# Regenerates the web pages' screenshots in docs/ from the browser tests that take them
# (tests/web, headless Chromium; each test saves its screenshots under
# test-output/screenshots/), then copies the ones the docs show:
#   ./scripts/docs_screenshots.sh
# Uses .venv like scripts/test.sh (PYTHON=... to use another interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
SHOTS="${RAGSIFT_TEST_ARTIFACTS:-test-output}/screenshots"
export RAGSIFT_TEST_BROWSER=require  # fail, not skip, when Chromium is missing

"$PYTHON" -m pytest -q -p no:cacheprovider \
    "tests/web/test_retrieval_testing.py::test_compare_shows_both_rankings_with_moves_and_stage_scores" \
    "tests/web/test_retrieval_testing.py::test_the_evaluation_view_charts_each_mode_with_intervals" \
    "tests/web/test_retrieval_testing.py::test_a_labels_file_saved_as_a_set_is_evaluated_again_after_a_reload_and_deleted" \
    "tests/web/test_retrieval_testing.py::test_the_debug_form_starts_from_the_kbs_default_search_options" \
    "tests/web/test_accessibility.py::test_kb_settings_page_saves_offers_a_reindex_and_has_no_serious_axe_violation" \
    "tests/web/test_chat_page.py::test_copy_feedback_rename_and_search_work_and_pass_axe[desktop]" \
    "tests/web/test_web_product_uploads.py::test_uploads_show_each_file_until_ready_or_failed_and_survive_a_reload"

# test screenshot -> docs image
while read -r shot image; do
    cp "$SHOTS/$shot.png" "docs/$image.png"
    echo "docs/$image.png <- $SHOTS/$shot.png"
done <<'MAP'
retrieval-testing-compare-desktop web-retrieval-compare
retrieval-testing-eval-1366 web-retrieval-eval
retrieval-testing-labelled-set-1366 web-retrieval-labelled-set
debug-kb-defaults-1366 web-debug-kb-defaults
axe-settings-desktop web-kb-settings
chat-feedback-desktop web-chat-feedback
chat-conversation-tools-desktop web-chat-conversations
uploads-desktop web-uploads
MAP
