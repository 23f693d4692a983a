"""Step 2: the program that runs is the template with each blank replaced by its canonical fill.

Identical answers therefore give byte-identical programs (the key for compile caching and
verdict memoisation). The template's module-level statements that are not definitions are the
lesson's "given check"; they are split off, keeping line numbers, so the harness can run the
definitions and the check separately.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import io
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass

from service.grading import syntax
from service.grading.extract import BLANK

_DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign,
                ast.AnnAssign)


@dataclass(frozen=True)
class Program:
    source: str  # template + canonical fills, the whole cell
    module: str  # definitions only (check lines blanked, line numbers kept)
    given_check: str  # the check only (other lines blanked)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.source.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=64)
def _blank_spans(template_src: str) -> tuple[tuple[tuple[int, int], tuple[int, int]], ...]:
    """Where each blank's token starts and ends: tokenized once per template (a few per catalog)."""
    return tuple((tok.start, tok.end) for tok in tokenize.generate_tokens(io.StringIO(template_src).readline)
                 if tok.type == tokenize.NAME and tok.string == BLANK)


def assemble(template_src: str, fills: Sequence[str | None]) -> Program:
    return _assemble(template_src, tuple(fills))


# A program seen before (a verdict memo hit: the same canonical fills) is assembled again by every
# grading of it, and parsing the whole cell was most of that. The program is a function of the
# template and the fills alone; a few recent ones are kept (each at most the submission's size cap
# three times over), so a class submitting the same fills assembles each once.
@functools.lru_cache(maxsize=64)
def _assemble(template_src: str, fills: tuple[str | None, ...]) -> Program:
    spots = _blank_spans(template_src)
    if len(spots) != len(fills):
        raise ValueError(f"template has {len(spots)} blanks, got {len(fills)} fills")
    present = [fill for fill in fills if fill is not None]  # an extraction without an error found every blank
    if len(present) != len(fills):
        raise ValueError(f"blanks without a fill: {[i + 1 for i, f in enumerate(fills) if f is None]}")
    lines = template_src.splitlines(keepends=True)
    for span, fill in sorted(zip(spots, present), key=lambda pair: pair[0][0], reverse=True):
        (row, col), (_, end_col) = span
        line = lines[row - 1]
        if line.strip() == BLANK:  # a block blank: the fill's statements, indented like the blank
            indent = line[:col]
            lines[row - 1] = "".join(f"{indent}{fill_line}\n" for fill_line in fill.splitlines())
        else:
            lines[row - 1] = line[:col] + fill + line[end_col:]
    source = "".join(lines)
    tree = syntax.parse(source)  # the fills were parsed already; this guards the substitution

    check_lines: set[int] = set()
    for stmt in tree.body:
        if not isinstance(stmt, _DEFINITIONS):
            check_lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    source_lines = source.splitlines(keepends=True)
    module = "".join("\n" if i + 1 in check_lines else line for i, line in enumerate(source_lines))
    check = "".join(line if i + 1 in check_lines else "\n" for i, line in enumerate(source_lines))
    return Program(source=source, module=module, given_check=check)
