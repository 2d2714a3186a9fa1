"""bootstrap.build: the ingestion and FAQ services (and the parsers) are built on first use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from ragsift.bootstrap import build
from ragsift.config import Settings
container = build(Settings(data_dir=sys.argv[1]))
seen = {"after_build": sorted(m for m in ("ragsift.ingestion.parsers", "bs4", "pypdf",
                                          "httpx", "fastapi") if m in sys.modules)}
first = container.ingestion
seen["same_ingestion"] = first is container.ingestion
seen["same_faq"] = container.faq is container.faq
seen["parsers_after_ingestion"] = "ragsift.ingestion.parsers" in sys.modules
container.close()
print(json.dumps(seen))
"""


def test_a_container_imports_the_parsers_only_when_ingestion_is_used(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "data")],
                          capture_output=True, text=True, timeout=300, check=True)
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {"after_build": [], "same_ingestion": True, "same_faq": True,
                    "parsers_after_ingestion": True}
