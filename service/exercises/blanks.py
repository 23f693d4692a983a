"""A template's blanks: the token that marks one, and the names a fill may use at each."""
from __future__ import annotations

import ast

BLANK = "______"


def names_in_scope(template: ast.Module, blank_index: int = 0) -> set[str]:
    """Names a fill may use: the enclosing function's parameters and earlier assignments, and `tl`."""
    spots = sorted((n.lineno, n.col_offset) for n in ast.walk(template) if isinstance(n, ast.Name) and n.id == BLANK)
    line = spots[blank_index][0]
    names = {"tl"}
    scope: ast.AST = template
    for node in ast.walk(template):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.lineno <= line <= (node.end_lineno or line):
            scope = node
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = scope.args
        names |= {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.lineno < line:
            names.add(node.id)
    return names


def blank_count(template: ast.Module) -> int:
    return sum(1 for node in ast.walk(template) if isinstance(node, ast.Name) and node.id == BLANK)
