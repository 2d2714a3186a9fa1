"""Dify's metadata conditions as one ragsift metadata filter (domain/metadata_filter.py).

Every operator of Dify's External Knowledge API (`metadata_condition`), on any metadata key,
a scope field (tenant_id, dataset_id, visibility, source, document_id) or the file name
(`filename`, alias `document_name`), joined by `logical_operator` `and` / `or`:

    is / is not          $eq / $ne (a string that reads as a number or ISO date also matches
                         the typed value: Dify's form sends strings)
    in / not in          $in / $nin (a list, or one value)
    =  ≠  >  <  ≥  ≤     $eq $ne $gt $lt $gte $lte on the typed value
    contains / not contains, start with, end with   $contains, $startswith, $endswith
    empty / not empty    absent or "" / present and not ""
    null / not null      absent / present
    before / after       earlier / later than an instant (a Unix timestamp, Dify's time type,
                         or an ISO date or datetime), on date, datetime or timestamp values

A file name is no metadata: its conditions are resolved into the ids of the KB's documents
whose file name passes them (`FilenameIds`). An unknown operator is UnsupportedCondition (3001).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, time
from typing import Any

from ragsift.domain.errors import InvalidInput
from ragsift.domain.metadata import KEY_PATTERN, SCOPE_KEYS, cli_value, encode_value, parse_date

# a filter on the field `filename` -> the ids of the documents whose file name passes it
FilenameIds = Callable[[dict[str, Any]], list[str]]
Raw = str | int | float | list[str | int | float] | None

FILENAME_FIELDS = frozenset({"filename", "document_name"})
_COMPARE = {"=": "$eq", "≠": "$ne", ">": "$gt", "<": "$lt", "≥": "$gte", "≤": "$lte"}
_TEXT = {"contains": "$contains", "start with": "$startswith", "end with": "$endswith"}
OPERATORS = ("is", "is not", "in", "not in", *_COMPARE, "contains", "not contains",
             "start with", "end with", "empty", "not empty", "null", "not null", "before",
             "after")


class UnsupportedCondition(InvalidInput):
    """A metadata condition ragsift has no filter for (HTTP 400, Dify's 3001)."""

    code = "unsupported_metadata_condition"


def field_name(name: str | list[str]) -> str:
    """The one field a condition names (Dify sends a string; its older docs a list of one)."""
    names = [name] if isinstance(name, str) else name
    if len(names) != 1:
        raise UnsupportedCondition(
            f"a metadata condition names one field; got {len(names)}: {names!r}")
    field = names[0]
    if field not in SCOPE_KEYS and field not in FILENAME_FIELDS and \
            not KEY_PATTERN.fullmatch(field):
        raise UnsupportedCondition(f"{field!r} is not a metadata key or a built-in field")
    return field


def _alternatives(value: str | int | float) -> list[Any]:
    """The value, and its typed reading when Dify sent a string (`"2024"` also matches 2024)."""
    if not isinstance(value, str):
        return [value]
    typed = encode_value(cli_value(value))
    return [value] if typed == value else [value, typed]


def _one(field: str, operator: str, value: Raw) -> str | int | float:
    if value is None or isinstance(value, list):
        raise UnsupportedCondition(f"{field!r} {operator!r} takes one value, got {value!r}"
                                   + (" (use 'in' for a list)" if value is not None else ""))
    return value


def _typed(field: str, operator: str, value: Raw) -> Any:
    one = _one(field, operator, value)
    return encode_value(cli_value(one)) if isinstance(one, str) else one


def _instant(field: str, operator: str, value: Raw) -> datetime:
    one = _one(field, operator, value)
    try:
        if isinstance(one, int | float) and not isinstance(one, bool):
            return datetime.fromtimestamp(one, UTC)
        moment = parse_date(one.strip()) if isinstance(one, str) else None
        if isinstance(moment, datetime):
            return moment.astimezone(UTC)
        if moment is not None:
            return datetime.combine(moment, time(), UTC)
    except (OverflowError, OSError, ValueError):  # NaN, or an instant past year 1 or 9999
        pass
    raise UnsupportedCondition(f"{field!r} {operator!r} takes a Unix timestamp or an ISO "
                               f"date or datetime, got {one!r}")


def _time(field: str, operator: str, value: Raw) -> dict[str, Any]:
    """Earlier (before) or later (after) than an instant, on each type a time can have: a
    datetime, a Unix timestamp (a number) or a date (its midnight, UTC)."""
    instant = _instant(field, operator, value)
    day = instant.date()
    if operator == "before":
        midnight = instant == datetime.combine(day, time(), UTC)
        on_day = {"$lt" if midnight else "$lte": {"$date": day.isoformat()}}
        op = "$lt"
    else:
        on_day, op = {"$gt": {"$date": day.isoformat()}}, "$gt"
    return {"$or": [{field: {op: {"$datetime": instant.isoformat()}}},
                    {field: {op: instant.timestamp()}}, {field: on_day}]}


def _in(field: str, operator: str, value: Raw) -> dict[str, Any]:
    if value is None:
        raise UnsupportedCondition(f"{field!r} {operator!r} needs a list of values")
    items = value if isinstance(value, list) else [value]
    values = [alt for item in items for alt in _alternatives(item)]
    return {field: {"$in" if operator == "in" else "$nin": values}}


def _empty(field: str) -> dict[str, Any]:
    return {"$or": [{field: {"$exists": False}}, {field: ""}]}


def condition_filter(field: str, operator: str, value: Raw) -> dict[str, Any]:
    """One Dify condition on `field` as a filter of the filter language."""
    if operator in ("is", "is not"):
        values = _alternatives(_one(field, operator, value))
        return {field: {"$in" if operator == "is" else "$nin": values}}
    if operator in ("in", "not in"):
        return _in(field, operator, value)
    if operator in _COMPARE:
        return {field: {_COMPARE[operator]: _typed(field, operator, value)}}
    if operator in _TEXT or operator == "not contains":
        text = str(_one(field, operator, value))
        clause = {field: {_TEXT.get(operator, "$contains"): text}}
        return {"$not": clause} if operator == "not contains" else clause
    if operator in ("empty", "not empty"):
        return _empty(field) if operator == "empty" else {"$not": _empty(field)}
    if operator in ("null", "not null"):
        return {field: {"$exists": operator == "not null"}}
    if operator in ("before", "after"):
        return _time(field, operator, value)
    raise UnsupportedCondition(
        f"comparison operator {operator!r} (on {field!r}) is not one of Dify's: "
        f"{', '.join(OPERATORS)}")


def conditions_filter(
    conditions: list[tuple[str, str, Raw]], logical_operator: str, filename_ids: FilenameIds,
) -> dict[str, Any]:
    """(field, operator, value) conditions joined by `and` / `or` as one filter; conditions
    on the file name become the ids of the documents whose file name passes them."""
    clauses = []
    for field, operator, value in conditions:
        if field in FILENAME_FIELDS:
            ids = filename_ids(condition_filter("filename", operator, value))
            clauses.append({"document_id": {"$in": ids}})
        else:
            clauses.append(condition_filter(field, operator, value))
    return {"$or" if logical_operator == "or" else "$and": clauses}


def filename_matcher(filenames: dict[str, str]) -> FilenameIds:
    """A FilenameIds over the KB's documents (id -> file name), by the reference evaluator."""
    from ragsift.domain.metadata_filter import evaluate, parse_filter

    def ids(raw: dict[str, Any]) -> list[str]:
        node = parse_filter(raw, builtins=frozenset({"filename"}))
        return [doc_id for doc_id, name in filenames.items()
                if evaluate(node, {"filename": name})]
    return ids

