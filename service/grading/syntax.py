"""The process's locked `ast.parse`, where grading modules have always imported it (service/syntax.py)."""
from __future__ import annotations

from service.syntax import parse

__all__ = ["parse"]
