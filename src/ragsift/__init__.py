"""ragsift: select the evidence an answer should be built from, and explain the choice."""

__version__ = "0.1.0"
