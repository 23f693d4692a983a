"""Where in a block fill a `describes` claim must hold: each call of a named function (`tl.load`,
`tl.store`), or one argument of it, read from the fill's AST.

A whole-body blank (a puzzle's kernel) holds several loads and stores; searching the whole body for
`other=float('-inf')` finds the one load that has it and misses the one that reads 0.0 (Long
Softmax's `wrong.zero_padding`), and `< N0` found in `row_mask = rows < N0` says nothing of a store
that is masked by columns only (`wrong.store_mask_cols_only`). A claim with `in_each: tl.load` and
`argument: other` is shown where *every* `tl.load` of the fill passes `other` (by keyword or position)
that one of the claim's `shown_by` patterns finds (searched, on the argument's canonical source with
the names it uses read through their definitions before the call: `mask=mask2` reads as
`row_mask[:, None] & (cols2[None, :] < T)`, and `row_mask` as `rows < N0`, a few levels deep).
A call whose own argument does not show it is still counted when the name its result is assigned to
goes through another call that does (`x = tl.where(mask, x, float('-inf'))` after a load reading 0.0).
A fill that does not parse, or makes no such call, is read as before: the whole fill searched
(stated_fill.shows), so a claim is never stricter than it was on code this module cannot read; an
argument that is a name the fill does not define (a constexpr parameter, a global) is not read and
counts as shown.
"""
from __future__ import annotations

import ast
import functools
import re
from collections.abc import Sequence

from service.grading.stated_fill import shows

# Each call's positional parameters (Triton's signatures), to find an argument passed by position.
_PARAMETERS: dict[str, tuple[str, ...]] = {
    "tl.load": ("pointer", "mask", "other"),
    "tl.store": ("pointer", "value", "mask"),
    "tl.atomic_add": ("pointer", "val", "mask"),
    "tl.where": ("condition", "x", "y"),
}
_ALIASES = {"triton.language.": "tl."}
_DEPTH = 4  # names read through at most this many definitions
_SOURCE_MAX = 4000  # characters of one expanded argument (a longer one is read unexpanded)
_FILL_MAX = 20_000  # characters of a fill parsed (a longer one is searched whole, as before)


def _name(func: ast.expr) -> str:
    try:
        text = ast.unparse(func)
    except (ValueError, RecursionError):
        return ""
    for long, short in _ALIASES.items():
        if text.startswith(long):
            return short + text[len(long):]
    return text


# Syntax nodes one expansion may copy in all. A definition that names the next one n times, four levels down
# (`a = b + b + …`, `b = c + c + …`), expands into n**4 copies: 495 characters of a puzzle's body cost the worker
# 15 s of CPU, and the 20 000 a block may hold days and gigabytes, each time an explanation said a claim of the
# fill (red team 10). Past the budget the argument is read unexpanded, as a longer source than _SOURCE_MAX is.
_EXPAND_NODES = 4000


class _TooLarge(ValueError):
    """An expansion past _EXPAND_NODES (a ValueError: every caller reads the argument unexpanded then)."""


class _Expand(ast.NodeTransformer):
    """Names replaced by their latest definition before `before` (line, column), `depth` levels, copying at
    most `budget[0]` syntax nodes in all (shared by the levels; past it _TooLarge)."""

    def __init__(self, definitions: dict[str, list[tuple[tuple[int, int], ast.expr]]],
                 before: tuple[int, int], depth: int, budget: list[int] | None = None) -> None:
        self.definitions, self.before, self.depth = definitions, before, depth
        self.budget = budget if budget is not None else [_EXPAND_NODES]

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if self.depth <= 0 or not isinstance(node.ctx, ast.Load):
            return node
        earlier = [(at, value) for at, value in self.definitions.get(node.id, ()) if at < self.before]
        if not earlier:
            return node
        at, value = max(earlier, key=lambda d: d[0])
        self.budget[0] -= sum(1 for _ in ast.walk(value))
        if self.budget[0] < 0:
            raise _TooLarge(node.id)
        inner = _Expand(self.definitions, at, self.depth - 1, self.budget).visit(_copy(value))
        return ast.copy_location(inner, node) if isinstance(inner, ast.expr) else node


def _copy(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


@functools.lru_cache(maxsize=256)
def _sites(code: str, call: str, argument: str | None) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """Each call of `call` in the fill: its argument's expanded source ("" where not passed; the whole
    call where no argument is named) and the sources of the calls its assigned result goes through.
    None where the fill does not parse."""
    if len(code) > _FILL_MAX:
        return None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    definitions: dict[str, list[tuple[tuple[int, int], ast.expr]]] = {}
    results: dict[int, str] = {}  # id of a call node -> the name its result is assigned to
    calls: list[ast.Call] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                at = (node.end_lineno or node.lineno, node.end_col_offset or 0)
                definitions.setdefault(targets[0].id, []).append((at, node.value))
                for inner in ast.walk(node.value):  # `x = tl.load(…).to(tl.float32)` too
                    if isinstance(inner, ast.Call):
                        results[id(inner)] = targets[0].id
        if isinstance(node, ast.Call):
            calls.append(node)
    found: list[tuple[str, tuple[str, ...]]] = []
    for node in calls:
        if _name(node.func) != call:
            continue
        value: ast.expr | None = node
        if argument is not None:
            value = next((k.value for k in node.keywords if k.arg == argument), None)
            position = _PARAMETERS.get(call, ()).index(argument) if argument in _PARAMETERS.get(call, ()) else -1
            if value is None and 0 <= position < len(node.args):
                value = node.args[position]
        if value is None:
            source = ""
        elif isinstance(value, ast.Name) and value.id not in definitions:
            found.append((_UNKNOWN, ()))  # a name from outside the fill (a parameter, a global): not read
            continue
        else:
            try:
                expanded = _Expand(definitions, (node.lineno, node.col_offset), _DEPTH).visit(_copy(value))
                source = ast.unparse(expanded)
                if len(source) > _SOURCE_MAX:
                    source = ast.unparse(value)
            except (ValueError, RecursionError, SyntaxError):
                source = ast.unparse(value)
        through: tuple[str, ...] = ()
        target = results.get(id(node))
        if target is not None:
            through = tuple(ast.unparse(c) for c in calls if c is not node and c.lineno >= node.lineno
                            and any(isinstance(n, ast.Name) and n.id == target for n in ast.walk(c)))
        found.append((source, through))
    return tuple(found)


_UNKNOWN = "\x00unknown"


def claim_shown(patterns: Sequence[re.Pattern[str]], code: str, in_each: str | None = None,
                argument: str | None = None) -> bool:
    """Whether the fill `code` shows a claim: its `shown_by` patterns over the whole fill
    (stated_fill.shows), or, with `in_each`, in each call of it (see the module's note)."""
    if in_each is None:
        return shows(patterns, code)
    sites = _sites(code, in_each, argument)
    if not sites:
        return shows(patterns, code)
    return all(source == _UNKNOWN or any(p.search(source) for p in patterns)
               or any(p.search(t) for p in patterns for t in through) for source, through in sites)


class _Unsubscripted(ast.NodeTransformer):
    """`cols[None, :]` read as `cols`: how an explanation writes a broadcast name."""

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        return node.value


def _spaced_out(node: ast.AST) -> str:
    try:
        return re.sub(r"\s+", "", ast.unparse(_Unsubscripted().visit(_copy(node))).lower())  # type: ignore[arg-type]
    except (ValueError, RecursionError, SyntaxError):
        return ""


@functools.lru_cache(maxsize=256)
def failing_parts(code: str, in_each: str, argument: str | None,
                  patterns: tuple[re.Pattern[str], ...]) -> tuple[str, ...]:
    """What an honest explanation of the calls that do not show a claim quotes (lower-case, no spaces,
    broadcast subscripts dropped): `other=0.0` of the load reading 0.0; the comparisons in the failing
    argument, as written or its names read through once, that no passing call's argument holds at any
    depth (`cols2<t-1`; not `rows<n0`, which the passing loads hold too). An
    explanation that quotes one describes the fill it has (freetext._not_the_fill)."""
    if argument is None or len(code) > _FILL_MAX:
        return ()
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    definitions: dict[str, list[tuple[tuple[int, int], ast.expr]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name):
                definitions.setdefault(targets[0].id, []).append(
                    ((node.end_lineno or node.lineno, node.end_col_offset or 0), node.value))
    passing: set[str] = set()
    failing: list[str] = []
    failing_raw: set[str] = set()
    others: list[tuple[str, set[str]]] = []  # another kind of call's argument: as written, its comparisons
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _name(node.func) not in _PARAMETERS:
            continue
        if _name(node.func) != in_each:
            value = next((k.value for k in node.keywords if k.arg == argument), None)
            if value is not None:
                try:
                    levels = [_Expand(definitions, (node.lineno, node.col_offset), depth).visit(_copy(value))
                              for depth in range(_DEPTH + 1)]
                except (ValueError, RecursionError, SyntaxError):
                    continue
                others.append((_spaced_out(value), {_spaced_out(n) for level in levels for n in ast.walk(level)
                                                    if isinstance(n, ast.Compare)}))
            continue
        value = next((k.value for k in node.keywords if k.arg == argument), None)
        parameters = _PARAMETERS.get(in_each, ())
        if value is None and argument in parameters and parameters.index(argument) < len(node.args):
            value = node.args[parameters.index(argument)]
        if value is None:
            continue
        try:
            levels = [_Expand(definitions, (node.lineno, node.col_offset), depth).visit(_copy(value))
                      for depth in range(_DEPTH + 1)]
            full = ast.unparse(levels[-1])
        except (ValueError, RecursionError, SyntaxError):
            continue
        if any(p.search(full) for p in patterns):  # what a passing call holds, at any depth, excuses nothing
            passing |= {_spaced_out(n) for level in levels for n in ast.walk(level) if isinstance(n, ast.Compare)}
            continue
        compares = {_spaced_out(n) for level in levels[:2] for n in ast.walk(level) if isinstance(n, ast.Compare)}
        failing_raw.add(_spaced_out(value))
        failing.append(f"{argument.lower()}={_spaced_out(value)}")
        failing.extend(sorted(compares))
    # what another call holds with another argument (the loads' `rows < N0` under a store masked by
    # `row_mask` only) is no quote of the failing call's
    for raw, compares in others:
        if raw not in failing_raw:
            passing |= compares
    return tuple(dict.fromkeys(f for f in failing if f and f not in passing))
