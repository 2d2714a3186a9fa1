"""S3ObjectStore against a real S3-protocol HTTP server on localhost (moto's server mode)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from api.api_helpers import HOTELS, SMALL_CHUNKS
from ragsift.adapters import s3_object_store
from ragsift.adapters.s3_object_store import (
    ObjectStoreUnavailable,
    S3ObjectStore,
    parse_s3_url,
)
from ragsift.bootstrap import build
from ragsift.config import Settings
from ragsift.domain.errors import NotFound
from ragsift.domain.models import DocumentStatus

CREDENTIALS = {"access_key_id": "test-key", "secret_access_key": "test-secret"}
REGION = "us-east-1"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket(endpoint: str, request: pytest.FixtureRequest) -> Iterator[str]:
    name = f"originals-{abs(hash(request.node.name)) % 10**8}"
    client = raw_client(endpoint)
    client.create_bucket(Bucket=name)
    yield name
    for item in client.list_objects_v2(Bucket=name).get("Contents", []):
        client.delete_object(Bucket=name, Key=item["Key"])
    client.delete_bucket(Bucket=name)


def raw_client(endpoint: str) -> Any:
    return boto3.client(
        "s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id="test-key",
        aws_secret_access_key="test-secret",
    )


def keys(endpoint: str, bucket: str) -> list[str]:
    contents = raw_client(endpoint).list_objects_v2(Bucket=bucket).get("Contents", [])
    return sorted(item["Key"] for item in contents)


def store(endpoint: str, url: str) -> S3ObjectStore:
    return S3ObjectStore(url, endpoint_url=endpoint, region=REGION, **CREDENTIALS)


def test_put_get_and_overwrite_round_trip_under_the_prefix(endpoint: str, bucket: str) -> None:
    objects = store(endpoint, f"s3://{bucket}/ragsift/originals/")
    objects.put("kb/doc/年假.md", "年假十五天".encode())
    assert objects.get("kb/doc/年假.md") == "年假十五天".encode()
    objects.put("kb/doc/年假.md", b"replaced")
    assert objects.get("kb/doc/年假.md") == b"replaced"
    assert keys(endpoint, bucket) == ["ragsift/originals/kb/doc/年假.md"]
    objects.close()


def test_a_missing_object_is_not_found(endpoint: str, bucket: str) -> None:
    objects = store(endpoint, f"s3://{bucket}")
    with pytest.raises(NotFound, match="no stored object 'kb/missing'"):
        objects.get("kb/missing")


def test_delete_prefix_removes_the_folder_and_the_object_but_not_look_alikes(
    endpoint: str, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3_object_store, "_DELETE_BATCH", 2)  # several DeleteObjects calls
    objects = store(endpoint, f"s3://{bucket}/p")
    for key in ("kb/doc/a", "kb/doc/b", "kb/doc/sub/c", "kb/doc2/a", "kb/doc.txt", "kb/doc"):
        objects.put(key, b"x")

    objects.delete_prefix("kb/doc")

    assert keys(endpoint, bucket) == ["p/kb/doc.txt", "p/kb/doc2/a"]
    objects.delete_prefix("kb/never-there/")  # absent is fine


@pytest.mark.parametrize("key", ["", "/abs", "a/../b", "a//b", "./a", "a\\b", "a\x00b"])
def test_unsafe_keys_are_refused(endpoint: str, bucket: str, key: str) -> None:
    objects = store(endpoint, f"s3://{bucket}")
    with pytest.raises(ValueError, match="invalid object key"):
        objects.put(key, b"x")


def test_a_missing_bucket_fails_at_construction(endpoint: str) -> None:
    with pytest.raises(ObjectStoreUnavailable, match="bucket 'no-such-bucket' is not usable"):
        store(endpoint, "s3://no-such-bucket/x")


@pytest.mark.parametrize("url", ["s3://", "http://bucket/x", "s3://bucket/x?y=1", "bucket/x"])
def test_malformed_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match="s3://bucket"):
        parse_s3_url(url)
    with pytest.raises(ValueError, match="object_store_url must look like"):
        Settings(object_store_url=url)


def test_half_given_credentials_are_refused() -> None:
    with pytest.raises(ValueError, match="s3_access_key_id and s3_secret_access_key"):
        Settings(object_store_url="s3://b", s3_access_key_id="only-the-id")


def test_ingestion_keeps_originals_in_s3_and_reindexes_and_deletes_them_there(
    endpoint: str, bucket: str, tmp_path: Path
) -> None:
    container = build(Settings(
        data_dir=tmp_path, object_store_url=f"s3://{bucket}/ragsift", s3_endpoint_url=endpoint,
        s3_region=REGION, s3_access_key_id="test-key", s3_secret_access_key="test-secret",
        **SMALL_CHUNKS,
    ))
    try:
        kb = container.ingestion.ensure_kb("docs")
        outcome = container.ingestion.ingest_bytes(kb, "hotels.md", HOTELS)
        document = outcome.document
        assert document.status == DocumentStatus.READY
        assert keys(endpoint, bucket) == [f"ragsift/{kb.id}/{document.id}/hotels.md"]
        assert not (tmp_path / "objects").exists()

        again = container.ingestion.reindex(document.id)
        assert (again.document.status, again.chunks) == (DocumentStatus.READY, outcome.chunks)

        container.ingestion.delete_document(document.id)
        assert keys(endpoint, bucket) == []
    finally:
        container.close()
