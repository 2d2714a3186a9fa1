"""Adapters that plug ragsift into the stacks people already use (MCP, LangChain, ...).

Each module imports its own optional dependency; importing this package imports none of them.
"""
