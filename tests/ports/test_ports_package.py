"""ragsift.ports loads each port's module when the port is first asked for."""

from __future__ import annotations

import importlib

import pytest

import ragsift.ports as ports


def test_every_exported_name_resolves_to_its_modules_object() -> None:
    for name in ports.__all__:
        value = getattr(ports, name)
        home = importlib.import_module(f"ragsift.ports.{ports._HOMES[name]}")
        assert value is getattr(home, name), name
    assert sorted(ports._HOMES) == sorted(ports.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        ports.Nothing  # noqa: B018
    with pytest.raises(ImportError):
        exec("from ragsift.ports import Nothing", {})
