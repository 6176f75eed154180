"""Model usage a scope records: tokens in and out and the models, summed per invocation."""

from __future__ import annotations

from typing import Any

from tracekit.events import Usage
from tracekit.sdk import attributes as A

__all__ = ["UsageTally"]


class UsageTally:
    """The sum of the model calls one scope recorded.

    Example:
        >>> tally = UsageTally()
        >>> tally.add(120, 30, "gpt-x")
        >>> tally.add(80, None, "gpt-x")
        >>> tally.usage()
        Usage(inputTokens=200, outputTokens=30, models=['gpt-x'])
    """

    __slots__ = ("input_tokens", "models", "output_tokens")

    def __init__(self) -> None:
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.models: list[str] = []

    def add(self, input_tokens: int | None, output_tokens: int | None, model: str | None) -> None:
        """Add one call's usage (a missing count adds nothing; a model is kept once).

        Raises:
            ValueError: a count is not a whole number >= 0, or the model is an empty name.
        """
        if input_tokens is not None:
            self.input_tokens = (self.input_tokens or 0) + _count(input_tokens, "input_tokens")
        if output_tokens is not None:
            self.output_tokens = (self.output_tokens or 0) + _count(output_tokens, "output_tokens")
        if model is not None:
            if not isinstance(model, str) or not model:
                raise ValueError(f"model must be a non-empty name, not {model!r}")
            if model not in self.models:
                self.models.append(model)

    def usage(self) -> Usage:
        """The record's ``usage``."""
        return Usage(
            inputTokens=self.input_tokens,
            outputTokens=self.output_tokens,
            models=list(self.models) or None,
        )

    def attributes(self) -> dict[str, Any]:
        """The span attributes of the same: ``gen_ai.usage.*`` and the model(s)."""
        attrs: dict[str, Any] = {}
        if self.input_tokens is not None:
            attrs[A.INPUT_TOKENS] = self.input_tokens
        if self.output_tokens is not None:
            attrs[A.OUTPUT_TOKENS] = self.output_tokens
        if self.models:
            attrs[A.MODELS] = list(self.models)
            if len(self.models) == 1:
                attrs[A.REQUEST_MODEL] = self.models[0]
        return attrs


def _count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number >= 0, not {value!r}")
    return value
