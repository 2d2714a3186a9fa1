"""Test helpers shared across test folders (importable as `support`)."""
