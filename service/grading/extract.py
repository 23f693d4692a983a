"""Step 1 of the pipeline: find each blank's fill and every edit outside the blanks.

The submission and the template are compared as syntax trees, so whitespace and comments are
never edits. Statements are aligned like a diff (an inserted line does not shift every later
comparison); inside an aligned pair the trees are walked in parallel, and wherever the template
has the blank (`______`) the submission's expression there is that blank's fill.

A blank that is a whole argument of a call (or a whole element of a tuple, list or set) may be
written as several (`advance(0, D_TILE_SIZE)` where the template has `advance(______)`): the
student's text for the blank spans a comma. When the rest of that call is the template's, the
whole span is the blank's fill, a `Spill` that fills.py refuses, not an edit outside the blank.
"""
from __future__ import annotations

import ast
import difflib
import functools
import io
from dataclasses import dataclass, field
from typing import Any, cast

from service.exercises.blanks import BLANK
from service.grading import syntax
from service.messages import render
from service.report import EditReport

BOUNDARY_CHECK_REMOVED = "boundary_check_removed"
MODIFIED_OUTSIDE_BLANK = "modified_outside_blank"
_TOLERANCE_KEYWORDS = ("atol", "rtol")
# Submission statements of a replaced block compared by similarity with one template statement
# (_pair_block); exact pairings (a filled blank, a def of the same name) are looked for in all.
MAX_SIMILARITY_CANDIDATES = 64


@dataclass(frozen=True)
class Spill:
    """A blank that is one argument (or element) of its call (tuple, list, set), written as several:
    `advance(0, D_TILE_SIZE)` where the template has `advance(______)`, `x, sem="relaxed"` where it has
    `atomic_add(p, ______)`, or one keyword argument where the blank is a positional one (`val=x`).
    Refused as a fill (fills.py)."""

    parts: tuple[str, ...]  # each one's canonical source; a keyword blank's first part is its value
    elements: bool  # of a tuple, list or set, not a call's arguments
    as_tuple: bool  # plain positional arguments: written in parentheses they would be one argument
    # What each part is, for the message (SPILL_KINDS); () for plain positional arguments or elements.
    kinds: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        return ", ".join(self.parts)

    @property
    def keywords(self) -> bool:
        """Whether a keyword argument is among what was written in the blank."""
        return any(kind in KEYWORD_KINDS for kind in self.kinds)


# The kinds of a spill's parts (Spill.kinds): the blank's one expression; a further positional
# argument or element; a keyword argument the template's call does not pass, or one it passes
# already (after the blank: written twice); `*xs`; `**kw`; and a keyword argument written where
# the blank is a positional argument (`val=x` for `atomic_add(p, ______)`).
SPILL_KINDS = ("expression", "argument", "keyword", "repeated_keyword", "unpacked", "unpacked_keywords", "named")
KEYWORD_KINDS = frozenset({"keyword", "repeated_keyword", "unpacked_keywords", "named"})


@dataclass
class Extraction:
    fills: list[ast.expr | list[ast.stmt] | None]
    edits: list[EditReport] = field(default_factory=list)
    error: str | None = None
    # blanks (by index) filled with several arguments or elements: the fill above is the first of them
    spills: dict[int, Spill] = field(default_factory=dict)
    _sources: tuple[str | None, ...] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def fill_sources(self) -> list[str | None]:
        """Each fill's canonical source (a new list each time): unparsed once, a grading reads them
        about seven times (nothing writes to an extraction's fills)."""
        if self._sources is None:
            self._sources = tuple(self.spills[i].source if i in self.spills else _unparse_fill(f)
                                  for i, f in enumerate(self.fills))
        return list(self._sources)


def _unparse_fill(fill: ast.expr | list[ast.stmt] | None) -> str | None:
    if fill is None:
        return None
    if isinstance(fill, list):  # a block blank: the statements, one per line, unindented
        return "\n".join(ast.unparse(stmt) for stmt in fill)
    return ast.unparse(fill)


def is_block_blank(stmt: ast.AST) -> bool:
    """A line holding only `______`: the blank is a block of statements (a whole body)."""
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Name) and stmt.value.id == BLANK


def blank_positions(tree: ast.AST) -> list[tuple[int, int]]:
    spots = [(n.lineno, n.col_offset) for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == BLANK]
    return sorted(spots)


def _dump(node: ast.AST) -> str:
    return ast.dump(node, annotate_fields=False, include_attributes=False)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _calls(node: ast.AST, name: str) -> list[ast.Call]:
    found = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            func = n.func
            tail = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if tail == name:
                found.append(n)
    return found


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _number(node: ast.expr | None) -> float | None:
    try:
        value = ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None
    return float(value) if isinstance(value, (int, float)) else None


def classify(template_stmt: ast.stmt | None, submission_stmt: ast.stmt | None, language: str = "zh") -> tuple[str, str]:
    """Which veto rule an edit raises, and why, in `language`."""
    rule, code, params = _classify(template_stmt, submission_stmt)
    if code == "extract.edit.tolerance_loosened" and params["after"] is None:
        params["after"] = render("extract.edit.tolerance_deleted", language)
    return rule, render(code, language, **params)


def _classify(template_stmt: ast.stmt | None, submission_stmt: ast.stmt | None) -> tuple[str, str, dict[str, Any]]:
    """Which veto rule an edit raises, and why: a message code and its parameters."""
    t = template_stmt
    s = submission_stmt
    if t is not None and any(isinstance(n, ast.Assert) for n in ast.walk(t)):
        kept = s is not None and (sum(isinstance(n, ast.Assert) for n in ast.walk(s))
                                  >= sum(isinstance(n, ast.Assert) for n in ast.walk(t)))
        if not kept or _assert_weakened(t, s):
            return BOUNDARY_CHECK_REMOVED, "extract.edit.assert_changed", {}
    t_checks = _calls(t, "assert_close") if t is not None else []
    if t_checks:
        s_checks = _calls(s, "assert_close") if s is not None else []
        if len(s_checks) < len(t_checks):
            return BOUNDARY_CHECK_REMOVED, "extract.edit.assert_close_removed", {}
        for tc, sc in zip(t_checks, s_checks):
            if _dump(tc.args[0]) != _dump(sc.args[0]) if tc.args and sc.args else len(tc.args) != len(sc.args):
                return BOUNDARY_CHECK_REMOVED, "extract.edit.assert_close_target", {}
            for kw in _TOLERANCE_KEYWORDS:
                before, after = _number(_keyword(tc, kw)), _number(_keyword(sc, kw))
                if before is not None and (after is None or after > before):
                    return BOUNDARY_CHECK_REMOVED, "extract.edit.tolerance_loosened", {"keyword": kw, "before": before,
                                                                             "after": after}
            if len(tc.args) != len(sc.args) or len(tc.keywords) != len(sc.keywords):
                return BOUNDARY_CHECK_REMOVED, "extract.edit.assert_close_arguments", {}
    if t is not None and _touches_mask(t, s):
        return BOUNDARY_CHECK_REMOVED, "extract.edit.mask_changed", {}
    return MODIFIED_OUTSIDE_BLANK, "extract.edit.outside_blank", {}


def _assert_weakened(t: ast.stmt, s: ast.stmt | None) -> bool:
    t_asserts = [_dump(n) for n in ast.walk(t) if isinstance(n, ast.Assert)]
    s_asserts = {_dump(n) for n in ast.walk(s) if isinstance(n, ast.Assert)} if s is not None else set()
    return any(a not in s_asserts for a in t_asserts)


def _touches_mask(t: ast.stmt, s: ast.stmt | None) -> bool:
    def mask_parts(stmt: ast.stmt | None) -> list[str]:
        if stmt is None:
            return []
        parts = []
        for call in _calls(stmt, "load") + _calls(stmt, "store"):
            value = _keyword(call, "mask")
            parts.append(_dump(value) if value is not None else "<no mask>")
            if (check := _keyword(call, "boundary_check")) is not None:  # block pointers' mask
                parts.append("boundary_check=" + _dump(check))
        for n in ast.walk(stmt):
            if isinstance(n, ast.Assign) and any(isinstance(tg, ast.Name) and tg.id == "mask" for tg in n.targets):
                parts.append("mask=" + _dump(n.value))
        return parts

    before = mask_parts(t)
    return bool(before) and before != mask_parts(s)


def _static_hint(t: ast.stmt | None, s: ast.stmt | None, language: str = "zh") -> str | None:
    """Name the misconception an edit points to, when it is one the lesson lists."""
    if s is None:
        return None
    def divisors(stmt: ast.AST) -> list[str]:
        return [_dump(n.right) for n in ast.walk(stmt) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)]

    before, after = divisors(t) if t is not None else [], divisors(s)
    if _dump(ast.Name("BLOCK", ast.Load())) in after and _dump(ast.Name("BLOCK", ast.Load())) not in before:
        return render("extract.hint.divisor_block", language)
    if any("Sub(Name('N'" in d and "Constant(1)" in d for d in after) and not any("Constant(1)" in d for d in before):
        return render("extract.hint.divisor_bessel", language)
    return None


class _Matcher:
    def __init__(self, template_src: str, submission_src: str, language: str,
                 t_keys: dict[int, str], t_blanks: set[int], s_keys: dict[int, str]) -> None:
        self.t_src, self.s_src, self.language = template_src, submission_src, language
        # Each statement's structural key (_structure_keys), by id: the template's made once (_template),
        # the submission's once per extraction; a node of neither gets its own made on the spot.
        self.keys = {**t_keys, **s_keys}
        self.t_blanks = t_blanks  # the template's nodes that hold a blank, by id (_template)
        self.fills: dict[tuple[int, int], ast.expr | list[ast.stmt]] = {}
        self.spills: dict[tuple[int, int], Spill] = {}
        self.changed: list[tuple[ast.stmt, ast.stmt]] = []
        self.edits: list[EditReport] = []
        self._stmt: tuple[ast.stmt, ast.stmt] | None = None
        self._lines: dict[str, list[str]] = {}  # each source's lines, split once (_segment)

    # -- statements ---------------------------------------------------------------------
    def stmts(self, t_list: list[ast.stmt], s_list: list[ast.stmt]) -> None:
        s_list = [s for s in s_list if not _is_docstring(s) or any(self._key(s) == self._key(t) for t in t_list)]
        block = next((i for i, t in enumerate(t_list) if is_block_blank(t)), None)
        if block is not None:
            return self._block(t_list, s_list, block)
        t_keys = [self._key(t) for t in t_list]
        s_keys = [self._key(s) for s in s_list]
        ops = difflib.SequenceMatcher(a=t_keys, b=s_keys, autojunk=False).get_opcodes()
        for tag, i1, i2, j1, j2 in ops:
            if tag == "equal":
                for t, s in zip(t_list[i1:i2], s_list[j1:j2]):
                    if self._holds_blank(t):
                        self._stmt_pair(t, s)  # the blank left as it was: record it as its own fill
                continue
            self._pair_block(t_list[i1:i2], s_list[j1:j2])

    def _block(self, t_list: list[ast.stmt], s_list: list[ast.stmt], index: int) -> None:
        """The statements around a block blank anchor it: what the submission has between the
        template's statements before and after the blank is the fill."""
        before, after = t_list[:index], t_list[index + 1:]
        head = 0
        while head < min(len(before), len(s_list)) and _fits(before[head], s_list[head]):
            head += 1
        tail = 0
        while (tail < min(len(after), len(s_list) - head)
               and _fits(after[len(after) - 1 - tail], s_list[len(s_list) - 1 - tail])):
            tail += 1
        for t, s in [*zip(before[:head], s_list[:head]),
                     *zip(after[len(after) - tail:], s_list[len(s_list) - tail:])]:
            if self._holds_blank(t):
                self._stmt_pair(t, s)  # an expression blank beside the block blank: record its fill
        middle = s_list[head:len(s_list) - tail]
        # Template statements not found at the ends were edited: pair them with the ends of the middle.
        lost_before, lost_after = before[head:], after[:len(after) - tail]
        fill = middle[len(lost_before):len(middle) - len(lost_after) or None] if (lost_before or lost_after) else middle
        if lost_before:
            self._pair_block(lost_before, middle[:len(lost_before)])
        if lost_after:
            self._pair_block(lost_after, middle[len(middle) - len(lost_after):])
        blank = cast(ast.Expr, t_list[index]).value  # is_block_blank chose it: an Expr of the blank's Name
        self.fills[(blank.lineno, blank.col_offset)] = fill  # may be empty or still `______`: fills.py says so

    def _pair_block(self, ts: list[ast.stmt], ss: list[ast.stmt]) -> None:
        """Pair statements of a replaced block by type and similarity, in order."""
        next_s = 0
        dumps: dict[int, str] = {}  # each submission statement's dump, made once
        for t in ts:
            best, best_ratio = None, 0.0
            # made when first compared by similarity: a statement paired by name or by its blanks (the
            # function holding a filled blank, on every grading) needs no dump of its whole subtree
            t_dump: str | None = None
            compared = 0
            for j in range(next_s, len(ss)):
                if type(ss[j]) is not type(t):
                    continue
                name = getattr(t, "name", None)
                if name is not None and getattr(ss[j], "name", None) == name:
                    best, best_ratio = j, 1.0  # a def or class pairs with the one of the same name
                    break
                if _fits(t, ss[j]):
                    best, best_ratio = j, 1.0  # the template statement with its blanks filled
                    break
                # Similarity is quadratic in the dumps' lengths: only for the first candidates, and
                # only where the cheap upper bounds leave room to beat the best so far (thousands of
                # inserted statements cost a minute of the worker's CPU otherwise).
                if compared >= MAX_SIMILARITY_CANDIDATES:
                    continue
                compared += 1
                if j not in dumps:
                    dumps[j] = _dump(ss[j])
                if t_dump is None:
                    t_dump = _dump(t)
                matcher = difflib.SequenceMatcher(a=t_dump, b=dumps[j], autojunk=False)
                if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
                    continue
                ratio = matcher.ratio()
                if ratio > best_ratio:
                    best, best_ratio = j, ratio
            if best is not None and (best_ratio >= 0.5 or len(ts) == len(ss) == 1):
                for j in range(next_s, best):
                    self._edit("inserted", None, ss[j])
                self._stmt_pair(t, ss[best])
                next_s = best + 1
            else:
                self._edit("deleted", t, None)
        for j in range(next_s, len(ss)):
            self._edit("inserted", None, ss[j])

    def _stmt_pair(self, t: ast.stmt, s: ast.stmt) -> None:
        outer = self._stmt
        self._stmt = (t, s)
        before = len(self.changed)
        self.node(t, s)
        self._stmt = outer
        # Compound statements (for, def) report their inner edits themselves: only a statement
        # that differs in its own parts becomes an edit here.
        if any(pair[0] is t for pair in self.changed[before:]):
            self._edit("changed", t, s)

    # -- expressions --------------------------------------------------------------------
    def node(self, t: ast.AST, s: ast.AST | None) -> None:
        if isinstance(t, ast.Name) and t.id == BLANK:
            if isinstance(s, ast.expr):
                self.fills[(t.lineno, t.col_offset)] = s
            else:
                self._mark()
            return
        if s is None or type(t) is not type(s):
            self._mark()
            return
        if isinstance(t, _SEQUENCES) and self._holds_blank(t) and (spot := _spill(t, s)) is not None:
            return self._spilled(t, s, *spot)
        for name in t._fields:
            tv, sv = getattr(t, name, None), getattr(s, name, None)
            if isinstance(tv, list) and (any(isinstance(x, ast.stmt) for x in tv)
                                         or any(isinstance(x, ast.stmt) for x in sv or [])):
                self.stmts(tv, sv or [])
            elif isinstance(tv, list):
                if not isinstance(sv, list) or len(tv) != len(sv):
                    self._mark()
                    for a, b in zip(tv, sv or []):  # still look for fills in what lines up
                        if isinstance(a, ast.AST):
                            self._find_fills_only(a, b)
                    continue
                for a, b in zip(tv, sv):
                    if isinstance(a, ast.AST):
                        self.node(a, b)
                    elif a != b:
                        self._mark()
            elif isinstance(tv, ast.AST):
                self.node(tv, sv)
            elif tv != sv:
                self._mark()

    def _spilled(self, t: ast.AST, s: ast.AST, index: int, count: int) -> None:
        """`s` is `t` with its item `index`, a blank, written as `count` items (_spill): those are the
        blank's fill; the other items and the rest of the node are compared as usual."""
        t_items, s_items = _items(t), _items(s)
        if isinstance(t, ast.Call):
            self.node(t.func, cast(ast.Call, s).func)  # fits (_spill): for the fills of blanks in it
        for a, b in [*zip(t_items[:index], s_items[:index]), *zip(t_items[index + 1:], s_items[index + count:])]:
            self.node(a, b)
        item, span = t_items[index], s_items[index:index + count]
        if isinstance(item, ast.keyword):  # `mask=______` written `mask=m, other=0.0`: its value and the rest
            blank, first = item.value, cast(ast.keyword, span[0]).value
            parts = [ast.unparse(first), *map(ast.unparse, span[1:])]
        elif isinstance(span[0], ast.keyword):  # `atomic_add(p, ______)` written `atomic_add(p, val=x)`
            blank, first = cast(ast.expr, item), span[0].value
            parts = [ast.unparse(part) for part in span]
        else:
            blank, first = cast(ast.expr, item), cast(ast.expr, span[0])
            parts = [ast.unparse(part) for part in span]
        self.fills[(blank.lineno, blank.col_offset)] = first
        plain = isinstance(t, ast.Call) and not isinstance(item, ast.keyword) \
            and not any(isinstance(p, (ast.keyword, ast.Starred)) for p in span)
        passed = {k.arg for k in t.keywords if k.arg is not None} if isinstance(t, ast.Call) else set()
        kinds = tuple(_spill_kind(part, first_part=i == 0, keyword_blank=isinstance(item, ast.keyword),
                                  passed=passed) for i, part in enumerate(span))
        self.spills[(blank.lineno, blank.col_offset)] = Spill(parts=tuple(parts), elements=not isinstance(t, ast.Call),
                                                              as_tuple=plain, kinds=kinds)

    def _find_fills_only(self, t: ast.AST, s: ast.AST | None) -> None:
        if s is None or not self._holds_blank(t):
            return
        self.node(t, s)

    def _key(self, node: ast.AST) -> str:
        key = self.keys.get(id(node))
        return key if key is not None else _structure_keys(node)[id(node)]

    def _holds_blank(self, t: ast.AST) -> bool:
        return id(t) in self.t_blanks

    def _mark(self) -> None:
        if self._stmt is not None:
            self.changed.append(self._stmt)

    def _segment(self, which: str, node: ast.stmt) -> str | None:
        """ast.get_source_segment, from lines split once per source: get_source_segment splits the
        whole source again on every call, so a submission of thousands of edited statements cost
        time quadratic in its length (64 KB of `v = 1` lines: 93 s of the worker's CPU)."""
        lines = self._lines.get(which)
        if lines is None:
            # newline="": split on \n, \r and \r\n and keep them, as get_source_segment does
            lines = self._lines[which] = io.StringIO(self.t_src if which == "t" else self.s_src, newline="").readlines()
        end_lineno, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if end_lineno is None or end_col is None or not 0 < node.lineno <= end_lineno <= len(lines):
            return None
        first, last = node.lineno - 1, end_lineno - 1
        if first == last:
            return lines[first].encode()[node.col_offset:end_col].decode(errors="replace")
        return "".join([lines[first].encode()[node.col_offset:].decode(errors="replace"), *lines[first + 1:last],
                        lines[last].encode()[:end_col].decode(errors="replace")])

    def _header(self, which: str, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[int, str]:
        """A def's (or class's) decorators and signature, without its body: where a changed def differs
        (its body's edits are reported statement by statement), with the line it starts on."""
        self._segment(which, node)  # splits the source into self._lines
        lines = self._lines[which]
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        last = max(node.lineno, node.body[0].lineno - 1 if node.body else node.lineno)
        header = lines[first - 1:last]
        while len(header) > 1 and (not header[-1].strip() or header[-1].lstrip().startswith("#")):
            header.pop()  # comments and blank lines between the signature and the body
        return first, "".join(header).rstrip("\n")

    def _edit(self, kind: str, t: ast.stmt | None, s: ast.stmt | None) -> None:
        rule, reason = classify(t, s, self.language)
        t_line, s_line = getattr(t, "lineno", None), getattr(s, "lineno", None)
        t_text = self._segment("t", t) if t is not None else ""
        s_text = self._segment("s", s) if s is not None else ""
        if kind == "changed" and isinstance(t, _DEFS) and isinstance(s, _DEFS):
            # A def differs in its own parts only in its header (a decorator added, as @triton.autotune or
            # @triton.jit(do_not_specialize=...), a parameter): show that, not its first lines, which for a
            # block blank are the student's fill (unchanged as far as this edit goes).
            (t_line, t_text), (s_line, s_text) = self._header("t", t), self._header("s", s)
        self.edits.append(EditReport(
            kind=kind, rule=rule, reason=reason,
            template_line=t_line, submission_line=s_line,
            template_text=_first_lines(t_text) if t is not None else "",
            submission_text=_first_lines(s_text) if s is not None else "",
            hint=_static_hint(t, s, self.language),
        ))


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _spill_kind(part: ast.AST, *, first_part: bool, keyword_blank: bool, passed: set[str]) -> str:
    """What one item of a spilled blank's span is (SPILL_KINDS). `passed`: the keyword arguments the
    template's call passes itself."""
    if first_part:
        if isinstance(part, ast.keyword) and not keyword_blank:
            return "named"
        return "unpacked" if isinstance(part, ast.Starred) else "expression"
    if isinstance(part, ast.keyword):
        if part.arg is None:
            return "unpacked_keywords"
        return "repeated_keyword" if part.arg in passed else "keyword"
    return "unpacked" if isinstance(part, ast.Starred) else "argument"


def _fits(t: ast.AST, s: ast.AST) -> bool:
    """`s` is `t` with each expression blank replaced by some expression (a long fill makes the
    two dumps look unalike, so similarity alone would not pair them)."""
    if isinstance(t, ast.Name) and t.id == BLANK:
        return isinstance(s, ast.expr)
    if type(t) is not type(s):
        return False
    if isinstance(t, _SEQUENCES) and _spill(t, s) is not None:  # a blank filled with several items
        return True
    for name in t._fields:
        tv, sv = getattr(t, name, None), getattr(s, name, None)
        if isinstance(tv, list):
            if not isinstance(sv, list) or len(tv) != len(sv):
                return False
            if not all(_fits(a, b) if isinstance(a, ast.AST) else a == b for a, b in zip(tv, sv)):
                return False
        elif isinstance(tv, ast.AST):
            if not isinstance(sv, ast.AST) or not _fits(tv, sv):
                return False
        elif tv != sv:
            return False
    return True


# Nodes whose items are separated by commas, where a blank may be one whole item.
_SEQUENCES = (ast.Call, ast.Tuple, ast.List, ast.Set)


def _items(node: ast.AST) -> list[ast.expr | ast.keyword]:
    """A call's arguments and keywords in the order written (`f(k=1, *a)` puts a star after a
    keyword), or a tuple's, list's or set's elements."""
    if isinstance(node, ast.Call):
        items: list[ast.expr | ast.keyword] = [*node.args, *node.keywords]
        return sorted(items, key=lambda n: (n.lineno, n.col_offset))
    return list(cast(ast.Tuple, node).elts)


def _is_blank_item(item: ast.AST) -> bool:
    """A whole argument or element that is the blank: `______`, or `name=______`."""
    value = item.value if isinstance(item, ast.keyword) and item.arg is not None else item
    return isinstance(value, ast.Name) and value.id == BLANK


def _spill(t: ast.AST, s: ast.AST) -> tuple[int, int] | None:
    """Where `s` (a call, tuple, list or set like `t`) is `t` with one blank item written as several
    (`advance(0, D_TILE_SIZE)` for `advance(______)`, `range(0, N, BLOCK)` for `range(______)`,
    `mask=m, other=0.0` for `mask=______`, `x, sem="relaxed"` for `atomic_add(p, ______)`), or a
    positional blank written as a keyword argument, alone or with more (`atomic_add(p, val=x)`):
    (the blank item's index, how many items stand for it). The called function and every other item
    must fit the template's (_fits), the items in order before and after; for `name=______`, the
    first of the blank's items must be that keyword. None otherwise: an argument changed away from
    the blank, or another function called, is an edit outside it. The first blank that fits is taken."""
    count_t = len(t.args) + len(t.keywords) if isinstance(t, ast.Call) else len(getattr(t, "elts", ()))
    count_s = len(s.args) + len(s.keywords) if isinstance(s, ast.Call) else len(getattr(s, "elts", ()))
    extra = count_s - count_t
    if extra < 0:
        return None
    t_items = _items(t)
    blanks = [i for i, item in enumerate(t_items) if _is_blank_item(item)]
    if not blanks or type(getattr(t, "ctx", None)) is not type(getattr(s, "ctx", None)):
        return None
    if isinstance(t, ast.Call) and not _fits(t.func, cast(ast.Call, s).func):
        return None  # `x.advance(______)` as `x.advance(a).to(b, c)`: not the template's call
    s_items = _items(s)
    for i in blanks:
        first, item = s_items[i], t_items[i]
        if isinstance(item, ast.keyword):
            if not isinstance(first, ast.keyword) or first.arg != item.arg or extra == 0:
                continue
        elif isinstance(first, ast.keyword):
            if first.arg is None:  # `**kw` where the blank is: no expression to name
                continue
        elif extra == 0:
            continue
        if all(_fits(a, b) for a, b in zip(t_items[:i], s_items[:i])) \
                and all(_fits(a, b) for a, b in zip(t_items[i + 1:], s_items[i + 1 + extra:])):
            return i, extra + 1
    return None


def _first_lines(text: str | None, limit: int = 6) -> str:
    lines = (text or "").splitlines()
    return "\n".join(lines[:limit] + (["…"] if len(lines) > limit else []))


@functools.lru_cache(maxsize=64)
def _template(template_src: str) -> tuple[ast.Module, list[tuple[int, int]], dict[int, str], set[int]]:
    """A template's tree, its blanks, its nodes' structural keys and the nodes that hold a blank (by
    id: valid while this entry holds the tree), made once: the catalog's few templates are graded
    thousands of times, and nothing here writes to a tree."""
    template = cast(ast.Module, syntax.parse(template_src))  # mode "exec" (the default) parses to a Module
    return template, blank_positions(template), _structure_keys(template), _nodes_holding_blanks(template)


def _structure_keys(tree: ast.AST) -> dict[int, str]:
    """The structural key (types, fields and constants; no positions: equal keys, equal code) of
    `tree` and of each statement in it, by id, each node formatted once from its children's keys.
    The matcher compares statements at every nesting level, and ast.dump formats a statement's whole
    subtree again at each level. Only statements are kept: an expression's key holds its subtree's,
    so keeping every nested expression's (a chain `a+a+…+a`) would take memory quadratic in its length."""
    keys: dict[int, str] = {}

    def key(node: ast.AST) -> str:
        parts = []
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                parts.append(key(value))
            elif isinstance(value, list):
                parts.append("[" + ",".join(key(v) if isinstance(v, ast.AST) else repr(v) for v in value) + "]")
            else:
                parts.append(repr(value))
        text = f"{type(node).__name__}({','.join(parts)})"
        if isinstance(node, ast.stmt) or node is tree:
            keys[id(node)] = text
        return text

    key(tree)
    return keys


def _nodes_holding_blanks(tree: ast.AST) -> set[int]:
    """Ids of the nodes with a blank at or below them, in one pass (a walk per node was a
    grading's largest cost in extraction)."""
    holding: set[int] = set()

    def visit(node: ast.AST) -> bool:
        found = isinstance(node, ast.Name) and node.id == BLANK
        for child in ast.iter_child_nodes(node):
            found = visit(child) or found
        if found:
            holding.add(id(node))
        return found

    visit(tree)
    return holding


def _notebook_line(source: str, lineno: int, language: str) -> str | None:
    """The syntax error's line is a notebook's magic or shell command (%%time, !pip install ...),
    pasted with the cell: say so, and that the grader runs plain Python."""
    lines = source.split("\n", lineno)
    line = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
    if not line.startswith(("%", "!")):
        return None
    return render("extract.error.notebook_line", language, line=lineno, text=line[:80])


# The deepest syntax tree a submission may have. Every later step on the trusted side walks the fills
# recursively (ast.unparse, NodeTransformers, ast.dump: two or three frames a level), and a fill such
# as `-` 700 times before an expression parses, but raised RecursionError out of the pipeline (the
# grading crashed instead of saying why). Honest code is a few dozen levels deep.
MAX_SYNTAX_DEPTH = 200
# The deepest one blank's fill may nest (levels of its syntax tree, as deeper_than counts them), whatever the
# exercise's fill policy. Within MAX_SYNTAX_DEPTH a fill could still exhaust the recursion limit later: ast.unparse
# takes up to six frames a level (a dict within a dict), and the host rules, the written answers' reading of the
# fill (stated_fill, fill_sites) and the report unparse it again from deeper stacks. A combine 154 dicts deep made
# host_fills.check's quote fail, and check() took that for "nothing found" (red team 10: 3/3 code points for
# torch's answer); 155 deep raised RecursionError out of Grader.grade. 64 levels is six times the catalogue's
# deepest fill (9: puzzle_long_softmax's body) and leaves every walk far from the limit; an expression blank of
# fill_policy expression is held to fills.MAX_FILL_DEPTH (24) besides.
MAX_FILL_NESTING = 64


def deeper_than(tree: ast.AST, limit: int) -> bool:
    """Whether `tree` has a node more than `limit` levels down (walked without recursion, a level at a
    time; each node's children as ast.iter_child_nodes gives them, read without its generators: a
    third of the time, on every grading)."""
    level = [tree]
    for _ in range(limit + 1):
        below: list[ast.AST] = []
        for node in level:
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, ast.AST):
                    below.append(value)
                elif isinstance(value, list):
                    below.extend([item for item in value if isinstance(item, ast.AST)])
        if not below:
            return False
        level = below
    return True


def extract(template_src: str, submission_src: str, *, language: str = "zh") -> Extraction:
    """The fills and the edits outside them; `error` (in `language`) when the code cannot be compared."""
    template, spots, t_keys, t_blanks = _template(template_src)
    # A byte-order mark saved by an editor is not code (Python drops it from a source file too).
    submission_src = submission_src.removeprefix("\ufeff")
    if "\x00" in submission_src:
        return Extraction(fills=[None] * len(spots), error=render("extract.error.nul", language))
    try:
        submission = cast(ast.Module, syntax.parse(submission_src))  # mode "exec": a Module
    except SyntaxError as exc:
        error = (_notebook_line(submission_src, exc.lineno, language)
                 or render("extract.error.syntax_at", language, line=exc.lineno, detail=exc.msg) if exc.lineno
                 else render("extract.error.syntax", language, detail=exc.msg))
        return Extraction(fills=[None] * len(spots), error=error)
    except (ValueError, RecursionError, MemoryError) as exc:
        return Extraction(fills=[None] * len(spots),
                          error=render("extract.error.unparsable", language, exception=type(exc).__name__))
    if deeper_than(submission, MAX_SYNTAX_DEPTH):
        return Extraction(fills=[None] * len(spots), error=render("extract.error.too_deep", language))
    try:
        matcher = _Matcher(template_src, submission_src, language, t_keys, t_blanks, _structure_keys(submission))
        matcher.stmts(template.body, submission.body)
    except RecursionError:
        return Extraction(fills=[None] * len(spots), error=render("extract.error.too_deep", language))
    fills = [matcher.fills.get(spot) for spot in spots]
    for number, fill in enumerate(fills, start=1):
        if fill is not None and any(deeper_than(root, MAX_FILL_NESTING) for root in (fill if isinstance(fill, list)
                                                                                   else [fill])):
            return Extraction(fills=[None] * len(spots),
                              error=render("fills.too_deep", language, blank=number, limit=MAX_FILL_NESTING))
    spills = {i: matcher.spills[spot] for i, spot in enumerate(spots) if spot in matcher.spills}
    extraction = Extraction(fills=fills, edits=matcher.edits, spills=spills)
    try:
        extraction.fill_sources  # noqa: B018 - unparsed once, here (every later step reads the cache)
    except RecursionError:  # (not with MAX_FILL_NESTING; kept so that no bound change can crash a grading)
        return Extraction(fills=[None] * len(spots), error=render("extract.error.too_deep", language))
    missing = [i + 1 for i, f in enumerate(fills) if f is None]
    if missing:
        extraction.error = render("extract.error.blank_missing", language, blanks=", ".join(map(str, missing)))
    return extraction
