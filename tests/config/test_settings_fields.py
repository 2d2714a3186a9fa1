"""The settings' public contract survives the split of config.py into a package (issue 40).

tests/config/settings_fields.json was dumped from config.py before the split: every field's
environment variable, type, default and constraints. A renamed, removed or retyped setting, a
changed default or a changed bound fails here; a new setting is added to the file on purpose.
Regenerate (only for an intended change):
    PYTHONPATH=src python tests/config/test_settings_fields.py > tests/config/settings_fields.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ragsift.config import Settings

_FIXTURE = Path(__file__).with_name("settings_fields.json")


def dump_fields() -> dict[str, dict[str, Any]]:
    """Each field's environment variable, type, default and constraints, as comparable text."""
    prefix = Settings.model_config.get("env_prefix", "")
    fields: dict[str, dict[str, Any]] = {}
    for name, info in Settings.model_fields.items():
        default = "<factory>" if info.default_factory is not None else repr(info.default)
        fields[name] = {"env": f"{prefix}{name}".upper(), "type": str(info.annotation),
                        "default": default, "constraints": [repr(m) for m in info.metadata]}
    return fields


def test_every_setting_keeps_its_env_name_type_default_and_bounds() -> None:
    expected = json.loads(_FIXTURE.read_text(encoding="utf-8"))
    actual = dump_fields()
    assert sorted(set(expected) - set(actual)) == [], "settings disappeared"
    assert sorted(set(actual) - set(expected)) == [], "new settings: add them to the fixture"
    changed = {name: (expected[name], actual[name]) for name in expected
               if expected[name] != actual[name]}
    assert changed == {}


def test_settings_read_env_names_verbatim_without_aliases() -> None:
    # the env names in the fixture are prefix + field name only while no field has an alias
    assert [n for n, f in Settings.model_fields.items() if f.alias or f.validation_alias] == []
    assert Settings.model_config.get("env_prefix") == "RAGSIFT_"
    assert Settings.model_config.get("frozen") is True


def test_env_variables_of_each_concern_reach_settings(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    env = {"RAGSIFT_DATA_DIR": str(tmp_path), "RAGSIFT_TOP_K": "7", "RAGSIFT_CHUNK_TOKENS": "300",
           "RAGSIFT_AUTH": "false", "RAGSIFT_KB_DOMAINS": '{"kb": "tea"}',
           "RAGSIFT_INDEX_URI": "http://milvus:19530", "RAGSIFT_LOG_FORMAT": "json",
           "RAGSIFT_CHAT_MAX_TOKENS": "99", "RAGSIFT_RERANK_STYLE": "tei",
           "RAGSIFT_METADATA_MAX_KEYS": "5", "RAGSIFT_KB_VERSION_RETENTION": "3"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    assert (settings.data_dir, settings.top_k, settings.chunk_tokens, settings.auth) == (
        tmp_path, 7, 300, False)
    assert settings.kb_domains == {"kb": "tea"}
    assert (settings.index_uri, settings.log_format, settings.chat_max_tokens) == (
        "http://milvus:19530", "json", 99)
    assert (settings.rerank_style, settings.metadata_max_keys,
            settings.kb_version_retention) == ("tei", 5, 3)


@pytest.mark.parametrize(("values", "message"), [
    ({"top_k": 40}, "must not exceed candidate_k"),
    ({"chunk_overlap_tokens": 200}, "less than half of chunk_tokens"),
    ({"parent_max_tokens": 100}, "parent_max_tokens must be at least chunk_tokens"),
    ({"run_doc": False, "run_faq": False}, "run_doc and run_faq cannot both be false"),
    ({"dense_weight": 0, "sparse_weight": 0}, "cannot both be 0"),
    ({"reranker": "http"}, "needs RAGSIFT_RERANK_BASE_URL"),
    ({"reranker": "cross-encoder"}, "needs RAGSIFT_RERANK_MODEL_PATH"),
    ({"embedder": "openai"}, "needs RAGSIFT_OPENAI_BASE_URL"),
    ({"object_store_url": "http://bucket"}, "must look like s3://bucket"),
    ({"s3_access_key_id": "id"}, "set both s3_access_key_id and s3_secret_access_key"),
    ({"chat_route_replies": {"hello.fr": "x"}}, "unknown keys"),
    ({"index_uri": "milvus.sqlite"}, "neither a milvus-lite file"),
])
def test_cross_checks_still_refuse_inconsistent_settings(values: dict[str, Any],
                                                         message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(**values)


if __name__ == "__main__":
    print(json.dumps(dump_fields(), indent=1, ensure_ascii=False, sort_keys=True))  # noqa: T201
