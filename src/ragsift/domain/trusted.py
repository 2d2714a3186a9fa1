"""Domain values from rows that were validated on the way in, built without validation.

`model_construct` already skips validation, but it still looks up every unset field's default
through pydantic's field machinery (~10 us for a Chunk, ~8 us for a Locator on this machine);
search hydrates 30 chunks per query. `TrustedBuilder` resolves the defaults once and fills the
instance the way `model_construct` does (`__dict__`, fields set, no extra, no private state).
tests/domain/test_trusted_values.py checks the result equals a validated model field by
field, so a pydantic upgrade that changes those internals fails there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__
_IMMUTABLE = (type(None), bool, int, float, str, bytes, tuple, frozenset)


def _shareable(value: Any) -> bool:
    """A default every instance may share: an immutable scalar or tuple, or a frozen model."""
    if isinstance(value, BaseModel):
        return bool(type(value).model_config.get("frozen"))
    return isinstance(value, _IMMUTABLE)


class TrustedBuilder(Generic[M]):
    """Builds `model` instances from complete, already valid field values."""

    def __init__(self, model: type[M]) -> None:
        if model.model_config.get("extra") == "allow" or model.__pydantic_post_init__:
            raise TypeError(f"{model.__name__}: extra fields or post-init need model_construct")
        defaults: dict[str, Any] = {}
        for name, field in model.model_fields.items():
            if field.is_required():
                continue
            value = field.get_default(call_default_factory=True, validated_data={})
            if not _shareable(value):
                raise TypeError(f"{model.__name__}.{name}: a mutable default cannot be shared")
            defaults[name] = value
        self._model = model
        self._defaults = defaults
        self._required = frozenset(model.model_fields) - frozenset(defaults)
        self._names = frozenset(model.model_fields)

    def __call__(self, values: Mapping[str, Any]) -> M:
        """Like `model.model_construct(**values)`; values the fast path does not fit (a
        required field missing, a name the model lacks) go through model_construct itself."""
        if not self._defaults:  # every field required (a fused hit): one comparison, one copy
            if values.keys() != self._names:
                return self._model.model_construct(**values)
            state = dict(values)
        elif self._required <= values.keys() <= self._names:
            state = dict(self._defaults)
            state.update(values)
        else:
            return self._model.model_construct(**values)
        instance = _new(self._model)
        _set(instance, "__dict__", state)
        _set(instance, "__pydantic_fields_set__", set(values))
        _set(instance, "__pydantic_extra__", None)
        _set(instance, "__pydantic_private__", None)
        return instance
