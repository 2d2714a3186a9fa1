"""Adapters: one module or package per real technology behind a port."""
