"""ObjectStore on S3 or an S3-compatible server (MinIO, Ceph RGW, ...) through boto3.

Keys are the same relative slash paths as in the local store ("kb/doc/filename"); they live
under an optional prefix of one bucket: s3://bucket/prefix -> "prefix/kb/doc/filename".
boto3 is an optional dependency (`pip install 'ragsift[s3]'`), imported only when used.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ragsift.domain.errors import NotFound, RagsiftError

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

logger = logging.getLogger(__name__)

_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}
_DELETE_BATCH = 1000  # the most keys one DeleteObjects request takes


class ObjectStoreUnavailable(RagsiftError):
    """The configured object store cannot be used (no such bucket, no access, unreachable)."""

    code = "object_store_unavailable"


@dataclass(frozen=True, slots=True)
class S3Location:
    bucket: str
    prefix: str  # "" or "some/prefix/" (always with the trailing slash)


def parse_s3_url(url: str) -> S3Location:
    """s3://bucket[/prefix] -> its bucket and key prefix; ValueError otherwise."""
    parsed = urlsplit(url)
    if parsed.scheme != "s3" or not parsed.netloc or parsed.query or parsed.fragment:
        raise ValueError(f"expected s3://bucket[/prefix], got {url!r}")
    prefix = parsed.path.strip("/")
    return S3Location(parsed.netloc, f"{prefix}/" if prefix else "")


def check_key(key: str) -> str:
    """`key` if it is a relative slash path without empty, '.' or '..' segments."""
    if not key or key.startswith("/") or "\\" in key or "\x00" in key:
        raise ValueError(f"invalid object key {key!r}: must be a relative slash path")
    if any(part in ("", ".", "..") for part in key.split("/")):
        raise ValueError(f"invalid object key {key!r}: empty, '.' or '..' segment")
    return key


def _error_code(exc: Exception) -> str:
    response: Any = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


class S3ObjectStore:
    """Keeps originals as objects in one bucket (under a prefix); thread-safe.

    The bucket must exist: it is checked once at construction, so a wrong name or missing
    credentials fail at start-up instead of at the first upload.
    """

    def __init__(
        self, url: str, *, endpoint_url: str | None = None, region: str | None = None,
        access_key_id: str | None = None, secret_access_key: str | None = None,
        connect_timeout_s: float = 10.0, read_timeout_s: float = 60.0,
    ) -> None:
        import boto3
        from botocore.config import Config

        self._location = parse_s3_url(url)
        config = Config(
            connect_timeout=connect_timeout_s, read_timeout=read_timeout_s,
            retries={"max_attempts": 3, "mode": "standard"},
            # S3-compatible servers usually serve buckets by path, not by subdomain.
            s3={"addressing_style": "path"} if endpoint_url else None,
        )
        self._client: S3Client = boto3.client(
            "s3", endpoint_url=endpoint_url, region_name=region,
            aws_access_key_id=access_key_id, aws_secret_access_key=secret_access_key,
            config=config,
        )
        self._url = url
        self._check_bucket()

    def _check_bucket(self) -> None:
        try:
            self._client.head_bucket(Bucket=self._location.bucket)
        except Exception as exc:
            raise ObjectStoreUnavailable(
                f"object store {self._url}: bucket {self._location.bucket!r} is not usable "
                f"({_error_code(exc) or type(exc).__name__}: {exc}); create it, or check the "
                "endpoint and the credentials"
            ) from exc

    def _key(self, key: str) -> str:
        return self._location.prefix + check_key(key)

    def put(self, key: str, data: bytes) -> None:
        """Store `data` under `key`, replacing what was there (S3 puts are atomic)."""
        self._client.put_object(Bucket=self._location.bucket, Key=self._key(key), Body=data)
        logger.debug("stored %d bytes at s3://%s/%s", len(data), self._location.bucket,
                     self._key(key))

    def get(self, key: str) -> bytes:
        """The bytes stored under `key`; NotFound when there are none."""
        try:
            response = self._client.get_object(Bucket=self._location.bucket, Key=self._key(key))
        except Exception as exc:
            if _error_code(exc) in _NOT_FOUND:
                raise NotFound(f"no stored object {key!r}") from exc
            raise
        body = response["Body"]
        try:
            return body.read()
        finally:
            body.close()

    def delete_prefix(self, prefix: str) -> None:
        """Remove the object `prefix` and every object under the folder `prefix/`."""
        exact = self._key(prefix.rstrip("/"))
        keys = [exact]
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self._location.bucket, Prefix=exact + "/"
        )
        for page in pages:
            keys.extend(item["Key"] for item in page.get("Contents", []) if "Key" in item)
        for start in range(0, len(keys), _DELETE_BATCH):
            batch = keys[start : start + _DELETE_BATCH]
            response = self._client.delete_objects(
                Bucket=self._location.bucket,
                Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True},
            )
            errors = response.get("Errors", [])
            if errors:
                raise RagsiftError(f"could not delete {len(errors)} object(s) under {prefix!r}: "
                                   f"{errors[0].get('Code')}: {errors[0].get('Message')}")
        logger.debug("deleted objects under %s", prefix)

    def close(self) -> None:
        """Release the HTTP connections."""
        self._client.close()
