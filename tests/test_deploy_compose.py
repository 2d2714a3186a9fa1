"""deploy/compose.yaml and deploy/Dockerfile, checked without a Docker engine: the services,
their health checks, volumes and start order, and that the ragsift configuration they carry is
valid for ragsift itself."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from ragsift.cli import app
from ragsift.config import Settings

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
SERVICES = {"postgres", "etcd", "minio", "minio-init", "milvus", "api", "worker"}
LONG_RUNNING = SERVICES - {"minio-init"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def interpolate(value: str) -> str:
    """Compose's ${VAR:-default} with nothing set, and $$ as a literal $."""
    value = re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: m.group(2), value)
    assert "${" not in value, f"unresolved variable in {value!r}"
    return value.replace("$$", "$")


def depends(service: dict[str, Any]) -> dict[str, str]:
    return {name: spec["condition"] for name, spec in service.get("depends_on", {}).items()}


def test_the_stack_has_every_service_and_each_long_running_one_a_health_check(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    assert set(services) == SERVICES
    for name in LONG_RUNNING:
        check = services[name].get("healthcheck")
        assert check and check["test"][0] in ("CMD", "CMD-SHELL"), name
        assert services[name]["restart"] == "unless-stopped", name
    assert services["minio-init"]["restart"] == "no"


def test_state_lives_in_named_volumes(compose: dict[str, Any]) -> None:
    mounts = {
        name: {m.split(":", 1)[1]: m.split(":", 1)[0] for m in service.get("volumes", [])}
        for name, service in compose["services"].items()
    }
    assert mounts["postgres"] == {"/var/lib/postgresql/data": "postgres-data"}
    assert mounts["etcd"] == {"/etcd": "etcd-data"}
    assert mounts["minio"] == {"/minio_data": "minio-data"}
    assert mounts["milvus"] == {"/var/lib/milvus": "milvus-data"}
    assert mounts["api"] == {"/var/lib/ragsift": "api-data"}
    used = {volume for m in mounts.values() for volume in m.values()}
    assert used == set(compose["volumes"])


def test_services_start_once_what_they_need_is_healthy(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert depends(services["milvus"]) == {"etcd": "service_healthy", "minio": "service_healthy"}
    assert depends(services["minio-init"]) == {"minio": "service_healthy"}
    assert depends(services["api"]) == {
        "postgres": "service_healthy", "milvus": "service_healthy",
        "minio-init": "service_completed_successfully",
    }
    assert depends(services["worker"]) == {
        "api": "service_healthy", "minio-init": "service_completed_successfully",
    }
    for name, service in services.items():  # every dependency is a service of the stack
        assert set(depends(service)) <= SERVICES - {name}


def test_the_api_and_worker_configuration_is_valid_ragsift_settings(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    services = compose["services"]
    assert services["api"]["environment"] == services["worker"]["environment"]
    env = {key: interpolate(str(value)) for key, value in services["api"]["environment"].items()}
    assert all(key.startswith("RAGSIFT_") for key in env)
    fields = {key.removeprefix("RAGSIFT_").lower(): value for key, value in env.items()}
    settings = Settings(**fields)  # validated as at start-up
    assert settings.ingest_queue == "database"
    assert settings.index_uri == "http://milvus:19530"
    assert settings.resolved_database_url.startswith("postgresql+psycopg://ragsift:")
    assert settings.resolved_database_url.endswith("@postgres:5432/ragsift")
    assert settings.object_store_url == "s3://ragsift-originals/originals"
    init = interpolate(services["minio-init"]["entrypoint"])
    assert "mc mb --ignore-existing local/ragsift-originals" in init
    assert settings.s3_endpoint_url == "http://minio:9000"
    milvus = {k: interpolate(v) for k, v in services["milvus"]["environment"].items()}
    assert (settings.s3_access_key_id, settings.s3_secret_access_key) == (
        milvus["MINIO_ACCESS_KEY_ID"], milvus["MINIO_SECRET_ACCESS_KEY"]
    )


def test_the_commands_the_containers_run_exist(compose: dict[str, Any]) -> None:
    services = compose["services"]
    runner = CliRunner()
    for name in ("api", "worker"):
        command = services[name]["command"]
        assert command[0] == "ragsift"
        options = [part for part in command[2:] if part.startswith("--")]
        result = runner.invoke(app, [command[1], "--help"], terminal_width=200)
        assert result.exit_code == 0, result.output
        for option in options:
            assert option in result.output, (name, option)
    probe = services["worker"]["healthcheck"]["test"][1]
    assert command[command.index("--health-file") + 1] in interpolate(probe)


def test_the_image_installs_the_extras_the_stack_uses() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"])
    installed = re.findall(r'"ragsift\[([\w,]+)\]"', dockerfile)
    assert installed and set(installed[0].split(",")) == {"milvus", "s3"} <= extras
    assert 'CMD ["ragsift", "serve", "--host", "0.0.0.0", "--port", "8000"]' in dockerfile
    ignored = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    assert ignored[ignored.index("*") + 1 :][:3] == ["!pyproject.toml", "!README.md", "!src"]


def test_the_api_requires_keys_and_names_the_hosts_it_answers(compose: dict[str, Any]) -> None:
    environment = compose["services"]["api"]["environment"]
    assert "RAGSIFT_AUTH" not in environment  # keys stay required (the default)
    assert environment["RAGSIFT_ALLOWED_HOSTS"]
    assert "0.0.0.0" in compose["services"]["api"]["command"]
