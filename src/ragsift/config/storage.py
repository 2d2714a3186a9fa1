"""Where ragsift keeps its data: the data folder, the database, the originals."""

from __future__ import annotations

from pathlib import Path
from typing import Self
from urllib.parse import urlsplit

from pydantic import Field, model_validator

from ragsift.config.concern import Concern


class StorageSettings(Concern):
    """Storage."""

    data_dir: Path = Field(
        default=Path(".ragsift"),
        description="folder of ragsift's data: the SQLite database, the embedded index, "
        "originals, caches",
    )
    database_url: str | None = Field(
        default=None, description="SQLAlchemy URL; default: a SQLite file under data_dir"
    )
    # object store for the originals (default: DATA_DIR/objects)
    object_store_url: str | None = Field(
        default=None, description="s3://bucket[/prefix] keeps originals in S3 or MinIO"
    )
    s3_endpoint_url: str | None = Field(
        default=None, description="S3-compatible endpoint, e.g. http://minio:9000"
    )
    s3_region: str | None = Field(
        default=None,
        description="region of the S3 bucket; default: boto3's usual chain",
    )
    s3_access_key_id: str | None = Field(
        default=None, description="default: boto3's usual chain (AWS_* variables, profiles)"
    )
    s3_secret_access_key: str | None = Field(
        default=None,
        description="secret of s3_access_key_id (set both or neither)",
    )

    @model_validator(mode="after")
    def _storage_checks(self) -> Self:
        if self.object_store_url is not None:
            parsed = urlsplit(self.object_store_url)
            if parsed.scheme != "s3" or not parsed.netloc or parsed.query or parsed.fragment:
                raise ValueError(
                    f"object_store_url must look like s3://bucket[/prefix], not "
                    f"{self.object_store_url!r}"
                )
        if (self.s3_access_key_id is None) != (self.s3_secret_access_key is None):
            raise ValueError("set both s3_access_key_id and s3_secret_access_key, or neither")
        return self

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'ragsift.sqlite').resolve()}"
