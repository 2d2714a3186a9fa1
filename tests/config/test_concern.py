"""A concern's settings build their schema only when used alone; Settings builds its own."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from ragsift.config.index import IndexSettings


def test_importing_the_settings_builds_one_schema_not_each_concerns() -> None:
    code = ("from ragsift.config import Settings\n"
            "from ragsift.config.concern import Concern\n"
            "concerns = [c for c in Settings.__mro__ if isinstance(c, type) "
            "and issubclass(c, Concern) and c is not Settings and c is not Concern]\n"
            "print(len(concerns), Settings.__pydantic_complete__, "
            "any(c.__pydantic_complete__ for c in concerns))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split() == ["20", "True", "False"]


def test_a_concern_used_alone_still_validates() -> None:
    assert IndexSettings(blas_threads="2").blas_threads == "2"
    with pytest.raises(ValidationError, match="blas_threads"):
        IndexSettings(blas_threads="many")
