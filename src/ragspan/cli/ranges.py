"""Click parameter types of the command line's own: a float range that refuses what is not
finite."""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that also refuses NaN and infinities (which compare false with
    every bound, so a plain range lets them through)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)


class ShareRange(FiniteFloatRange):
    """A share in a range that may also be written as a percentage: ``5%`` is 0.05 (the
    docs write shares so), ``0.05`` is 0.05. One reading of each: a bare number is the
    share itself."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.strip().endswith("%"):
            try:
                value = float(value.strip()[:-1]) / 100
            except ValueError:
                self.fail(f"{value!r} is not a percentage (write 5% or 0.05)", param, ctx)
        return super().convert(value, param, ctx)
