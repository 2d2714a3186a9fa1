"""A parsed metadata filter compiled into one Python predicate: the fast path the search
runs over a KB's documents. Same semantics as the reference evaluator
(metadata_filter.evaluate), which the property tests compare it with; faster because each
operand's type is resolved once and equality sets are hashed."""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from datetime import date, datetime
from typing import Any

from ragsift.domain.metadata import Value
from ragsift.domain.metadata_filter import And, Condition, Node, Not, Or

Record = Mapping[str, Value]
Predicate = Callable[[Record], bool]

# by exact type: a bool is no number, a datetime no date (decoded values are exact types)
_KIND: dict[type, str] = {bool: "bool", int: "number", float: "number", str: "str",
                          date: "date", datetime: "datetime", tuple: "list"}
_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


def _membership(field: str, items: tuple[Any, ...], negate: bool) -> Predicate:
    # (kind, value) pairs: 2024 and 2024.0 hash and compare equal, as the reference says
    keyed = frozenset((_KIND[type(item)], item) for item in items)
    strings = frozenset(item for item in items if type(item) is str)

    def holds(record: Record) -> bool:
        value = record.get(field)
        if value is None:
            return negate
        if type(value) is tuple:
            return strings.isdisjoint(value) is negate
        return ((_KIND.get(type(value)), value) in keyed) is not negate
    return holds


def _ordered(field: str, op: str, operand: Any) -> Predicate:
    kind, compare = _KIND[type(operand)], _ORDER[op]

    def holds(record: Record) -> bool:
        value = record.get(field)
        return value is not None and _KIND.get(type(value)) == kind and compare(value, operand)
    return holds


def _condition(node: Condition) -> Predicate:
    field, op, operand = node.field, node.op, node.operand
    if op == "$exists":
        return lambda record: (record.get(field) is not None) is operand
    if op in ("$eq", "$ne"):
        return _membership(field, (operand,), op == "$ne")
    if op in ("$in", "$nin"):
        return _membership(field, tuple(operand), op == "$nin")  # type: ignore[arg-type]
    if op == "$contains":
        return lambda record: type(value := record.get(field)) in (tuple, str) and (
            operand in value)  # type: ignore[operator]
    if op in ("$startswith", "$endswith"):
        method = str.startswith if op == "$startswith" else str.endswith
        return lambda record: type(value := record.get(field)) is str and method(
            value, operand)  # type: ignore[arg-type]
    return _ordered(field, op, operand)


def compile_predicate(node: Node) -> Predicate:
    """One predicate over a document's typed record that holds exactly when `node` does."""
    if isinstance(node, Condition):
        return _condition(node)
    if isinstance(node, Not):
        inner = compile_predicate(node.part)
        return lambda record: not inner(record)
    parts = tuple(compile_predicate(part) for part in node.parts)
    if isinstance(node, And):
        return lambda record: all(part(record) for part in parts)
    assert isinstance(node, Or)
    return lambda record: any(part(record) for part in parts)
