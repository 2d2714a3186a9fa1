"""The metadata filter language: one JSON grammar, parsed into a tree, and its reference
evaluator (the backends push the same semantics down; tests compare them with this one).

    filter   := { clause, ... }                      all clauses hold (AND)
    clause   := "$and": [filter, ...] | "$or": [filter, ...] | "$not": filter
              | FIELD: value                         same as {"$eq": value}
              | FIELD: { op: operand, ... }          all operators hold
    op       := $eq $ne $gt $gte $lt $lte (operand: a scalar)
              | $in $nin (a list of scalars) | $exists (true/false)
              | $contains $startswith $endswith (a string)

FIELD is a metadata key or a built-in scope field (source, tenant_id, dataset_id,
visibility, document_id). Scalars are strings, numbers, booleans and tagged dates
(`{"$date": ...}`, `{"$datetime": ...}`).

Semantics, per the field's value v (absent when the document lacks the key):
- `$eq x`: v equals x, same type (numbers compare across int/float; a date never equals a
  string); on a list v, some element equals x. `$ne` is its negation (true when absent).
- `$in [..]`: `$eq` holds for some element; `$nin` is its negation (true when absent).
- `$gt $gte $lt $lte`: v and x are both strings, numbers, dates or datetimes; false for
  absent, lists, booleans and mixed types. Booleans cannot be ordered (the filter is refused).
- `$contains s`: on a list v, s is an element; on a string v, s is a substring; else false.
- `$startswith s` / `$endswith s`: v is a string that begins / ends with s; else false (a
  list, a number or a date never does).
- `$exists b`: the key is present (b true) or absent (b false).
Errors (InvalidInput) name the offending part by its JSON path, e.g. `filter.$or[1].year.$gt`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from ragsift.domain.errors import InvalidInput
from ragsift.domain.metadata import (
    KEY_PATTERN,
    RESERVED_KEYS,
    SCOPE_KEYS,
    Scalar,
    Value,
    cli_pairs,
    decode_value,
)

Op = Literal["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$contains",
             "$startswith", "$endswith"]
_SCALAR_OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_ORDER_OPS = ("$gt", "$gte", "$lt", "$lte")
_TEXT_OPS = ("$contains", "$startswith", "$endswith")
OPERATORS = (*_SCALAR_OPS, "$in", "$nin", "$exists", *_TEXT_OPS)


@dataclass(frozen=True, slots=True)
class FilterLimits:
    """Bounds of one filter (settings filter_max_depth, filter_max_nodes)."""

    max_depth: int = 8
    max_nodes: int = 256


@dataclass(frozen=True, slots=True)
class Condition:
    field: str
    op: Op
    operand: Scalar | tuple[Scalar, ...] | bool


@dataclass(frozen=True, slots=True)
class And:
    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    parts: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    part: Node


Node = Condition | And | Or | Not


class _Parser:
    def __init__(self, limits: FilterLimits, builtins: frozenset[str]) -> None:
        self._limits = limits
        self._builtins = builtins
        self._nodes = 0

    def _count(self, path: str) -> None:
        self._nodes += 1
        if self._nodes > self._limits.max_nodes:
            raise InvalidInput(f"{path}: the filter has more than {self._limits.max_nodes} "
                               "conditions and operators")

    def filter(self, raw: Any, path: str, depth: int) -> Node:
        if depth > self._limits.max_depth:
            raise InvalidInput(f"{path}: the filter nests deeper than {self._limits.max_depth}")
        if not isinstance(raw, Mapping) or not raw:
            raise InvalidInput(f"{path}: a filter is a non-empty JSON object")
        parts = [self._clause(key, value, f"{path}.{key}", depth) for key, value in raw.items()]
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def _clause(self, key: Any, value: Any, path: str, depth: int) -> Node:
        self._count(path)
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise InvalidInput(f"{path}: {key} takes a non-empty list of filters")
            parts = tuple(self.filter(part, f"{path}[{i}]", depth + 1)
                          for i, part in enumerate(value))
            return And(parts) if key == "$and" else Or(parts)
        if key == "$not":
            return Not(self.filter(value, path, depth + 1))
        if not isinstance(key, str) or key.startswith("$"):
            raise InvalidInput(f"{path}: unknown operator {key!r}; logical operators are "
                               "$and, $or, $not")
        if key not in self._builtins and not KEY_PATTERN.fullmatch(key):
            raise InvalidInput(f"{path}: {key!r} is not a metadata key or a scope field")
        if key in RESERVED_KEYS and key not in self._builtins:  # no document has it
            raise InvalidInput(f"{path}: {key!r} is a built-in field a filter cannot name; "
                               f"the built-ins it can: {', '.join(sorted(self._builtins))}")
        if isinstance(value, Mapping) and value and all(
                isinstance(k, str) and k.startswith("$") for k in value):
            if set(value) <= {"$date", "$datetime"}:  # a tagged date, compared for equality
                return self._condition(key, "$eq", value, path)
            conditions = [self._condition(key, op, operand, f"{path}.{op}")
                          for op, operand in value.items()]
            return conditions[0] if len(conditions) == 1 else And(tuple(conditions))
        return self._condition(key, "$eq", value, path)

    def _condition(self, field: str, op: str, operand: Any, path: str) -> Condition:
        self._count(path)
        if op not in OPERATORS:
            raise InvalidInput(f"{path}: unknown operator {op!r}; one of {', '.join(OPERATORS)}")
        if op == "$exists":
            if not isinstance(operand, bool):
                raise InvalidInput(f"{path}: $exists takes true or false")
            return Condition(field, "$exists", operand)
        if op in _TEXT_OPS:
            if not isinstance(operand, str):
                raise InvalidInput(f"{path}: {op} takes a string")
            return Condition(field, op, operand)  # type: ignore[arg-type]
        if op in ("$in", "$nin"):
            if not isinstance(operand, list):
                raise InvalidInput(f"{path}: {op} takes a list of values")
            values = tuple(self._scalar(item, f"{path}[{i}]") for i, item in enumerate(operand))
            return Condition(field, op, values)  # type: ignore[arg-type]
        scalar = self._scalar(operand, path)
        if op in _ORDER_OPS and isinstance(scalar, bool):
            raise InvalidInput(f"{path}: booleans cannot be ordered; use $eq")
        return Condition(field, op, scalar)  # type: ignore[arg-type]

    @staticmethod
    def _scalar(raw: Any, path: str) -> Scalar:
        if raw is None:
            raise InvalidInput(f"{path}: null is not a value; use $exists")
        value = decode_value(raw, path)
        if isinstance(value, tuple):
            raise InvalidInput(f"{path}: a list is not a value here; use $in or $contains")
        return value


def parse_filter(
    raw: Any, limits: FilterLimits | None = None, builtins: frozenset[str] = SCOPE_KEYS,
) -> Node:
    """The filter tree of a JSON filter, or InvalidInput naming the offending part's path.
    `builtins`: the built-in fields the records it is evaluated on hold (the other reserved
    keys are refused: no record has them, so a filter on one would silently never hold)."""
    return _Parser(limits or FilterLimits(), builtins).filter(raw, "filter", 1)


def value_kind(value: Value) -> str:
    """A typed value's kind, as the filter compares them (one kind only equals its own)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, datetime):
        return "datetime"
    if isinstance(value, date):
        return "date"
    return "list" if isinstance(value, tuple) else "str"


def _equal(value: Value, operand: Scalar) -> bool:
    if isinstance(value, tuple):
        return isinstance(operand, str) and operand in value
    return value_kind(value) == value_kind(operand) and value == operand


def _order(value: Value, op: str, operand: Scalar) -> bool:
    kind = value_kind(value)
    if kind in ("bool", "list") or kind != value_kind(operand):
        return False
    left: Any = value
    right: Any = operand
    if op == "$gt":
        return bool(left > right)
    if op == "$gte":
        return bool(left >= right)
    if op == "$lt":
        return bool(left < right)
    return bool(left <= right)


def _holds(condition: Condition, record: Mapping[str, Value]) -> bool:
    op, operand = condition.op, condition.operand
    value = record.get(condition.field)
    if op == "$exists":
        return (value is not None) is operand
    if value is None:
        return op in ("$ne", "$nin")
    if op == "$eq":
        return _equal(value, operand)  # type: ignore[arg-type]
    if op == "$ne":
        return not _equal(value, operand)  # type: ignore[arg-type]
    if op in ("$in", "$nin"):
        found = any(_equal(value, item) for item in operand)  # type: ignore[union-attr]
        return found if op == "$in" else not found
    if op == "$contains":
        return isinstance(value, tuple | str) and operand in value
    if op == "$startswith":
        return isinstance(value, str) and value.startswith(operand)  # type: ignore[arg-type]
    if op == "$endswith":
        return isinstance(value, str) and value.endswith(operand)  # type: ignore[arg-type]
    return _order(value, op, operand)  # type: ignore[arg-type]


def evaluate(node: Node, record: Mapping[str, Value]) -> bool:
    """Whether a document whose metadata (and scope fields) are `record` passes `node`."""
    if isinstance(node, Condition):
        return _holds(node, record)
    if isinstance(node, And):
        return all(evaluate(part, record) for part in node.parts)
    if isinstance(node, Or):
        return any(evaluate(part, record) for part in node.parts)
    return not evaluate(node.part, record)


def where_filter(pairs: list[str]) -> dict[str, Any]:
    """`--where 'dept=hr'` pairs as a filter of equalities (values typed as `--meta` reads
    them), all of which must hold."""
    return cli_pairs(pairs)
