"""The fill an explanation gives, read against the submitted one: the fill it says it wrote, and a fill's spellings."""
from __future__ import annotations

import ast
import functools
import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# A claim is about what the fill *is*: over an expression fill (an expression blank, or every fill
# joined when that is one expression) a `shown_by` pattern must match the whole fill, so that a fill
# holding the claimed expression and more ("mask & (values >= 0)", a value-based mask on top of the
# position mask) is not read as it. The whole fill is read in two spellings: its canonical source
# (ast.unparse: whitespace and parentheses normalised) and that source with operand order normalised
# (_Ordered: `N > cols` is `cols < N`, the operands of &, |, ^, +, *, ==, !=, and, or sorted). A block
# fill (statements: a puzzle's body, host-side code) is searched: a claim names a part of it.
WHOLE_FILL = True
_ORDERED_MAX = 2000  # characters: a longer expression is read in its canonical spelling only
# A block fill longer than this is searched in its first and last half of it only. The lessons'
# `shown_by` patterns are the exercise author's, and some cost the cube of the text (fused's
# `(?s)\bsums\b.*\bsumsqs\b.*(zero|fill|= 0)` over a block of `sums` and `sumsqs` lines and no
# zeroing: 3 s for 4.8 KB, hours for the 64 KB the contract allows). The reference fills are at most
# 899 characters (puzzle_long_softmax's body).
_SHOWN_SEARCH_MAX = 2000
_COMMUTATIVE = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.Add, ast.Mult)
_MIRRORED: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.Gt: ast.Lt, ast.GtE: ast.LtE}


class _Ordered(ast.NodeTransformer):
    """Operand order normalised: one comparison written with > or >= is mirrored to < or <=; == and
    != and the operands of a commutative chain (a & b & c, a + b, a * b) are sorted by their source."""

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        self.generic_visit(node)
        if len(node.ops) == 1:
            op, right = node.ops[0], node.comparators[0]
            if type(op) in _MIRRORED:
                return ast.Compare(left=right, ops=[_MIRRORED[type(op)]()], comparators=[node.left])
            if isinstance(op, (ast.Eq, ast.NotEq)) and ast.unparse(right) < ast.unparse(node.left):
                return ast.Compare(left=right, ops=[op], comparators=[node.left])
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, _COMMUTATIVE):
            return node
        operands: list[ast.expr] = []

        def flatten(n: ast.expr) -> None:
            if isinstance(n, ast.BinOp) and type(n.op) is type(node.op):
                flatten(n.left)
                flatten(n.right)
            else:
                operands.append(n)

        flatten(node)
        operands.sort(key=ast.unparse)
        out = operands[0]
        for operand in operands[1:]:
            out = ast.BinOp(left=out, op=type(node.op)(), right=operand)
        return out

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        self.generic_visit(node)
        node.values.sort(key=ast.unparse)
        return node


@functools.lru_cache(maxsize=256)
def _fill_forms(code: str) -> tuple[str, ...] | None:
    """The spellings of an expression fill that a claim must match whole; None for a block fill."""
    try:
        tree = ast.parse(code, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    forms = [ast.unparse(tree)]
    if len(code) <= _ORDERED_MAX:
        try:
            forms.append(ast.unparse(ast.fix_missing_locations(_Ordered().visit(tree))))
        except RecursionError:
            pass
    return tuple(dict.fromkeys(forms))


def shows(patterns: Sequence[re.Pattern[str]], code: str) -> bool:
    """Whether the fill's source `code` shows a claim (see WHOLE_FILL)."""
    forms = _fill_forms(code) if WHOLE_FILL else None
    if forms is None:
        if len(code) > _SHOWN_SEARCH_MAX:  # its head and its tail: see _SHOWN_SEARCH_MAX
            half = _SHOWN_SEARCH_MAX // 2
            code = code[:half] + "\n" + code[-half:]
        return any(p.search(code) for p in patterns)
    return any(p.fullmatch(form) for p in patterns for form in forms)


# The fill an explanation says it wrote (issue 15, item 3). An exercise's `describes` claims catch an
# explanation of what a fill does (the lesson's mask over a `True` fill); this reads the code the
# explanation gives as its own fill ("我填的是 `cols < BLOCK`", "The fill is `offs < N`") and compares
# it with the fill submitted. What counts as the explanation giving its fill (_stated_candidates):
# - code right after a phrase that says what was filled ("我填的是", "空里是", "the fill is",
#   "I filled in", "the blank is", "blank = " …), in backticks or bare;
# - the explanation's first line when it is code alone (the answer first, then the reasons);
# - a whole template statement or call around an expression blank given with another fill in its
#   place (`centered_sq = tl.where(cols < BLOCK, …)`, `tl.load(…, mask=offs < N, …)`): the code in
#   the blank's place is the fill given.
# Code in backticks elsewhere is talked about, not given as the fill (`x - mean`, `tl.where`), and is
# never read. A stated fill is the submitted one when some expression blank's fill, or the reference's
# where the submitted fill behaves as it (`reference_fills`), is the same expression once spelled
# alike: canonical source, operand order (_Ordered), numbers by value (`0` is `0.0`, `float('-inf')`
# is `-math.inf`), and the names the template defines once from other names read as their definition
# (lesson 6's `mask = cols < N`: `cols < N` is `mask`). Not read as a statement of the fill: a part of
# the submitted fill (`cols < N` of `(cols < N) & (cols >= 0)`); a part of the template's own code
# after a phrase without a subject ("padding lane 填 0.0" is the load's `other=0.0`) or on the first
# line; code that holds the submitted fill (the surrounding line told with the fill in it); a
# narrative of an earlier attempt ("一开始填的是 True，后来改成 mask", "at first I wrote …, then …");
# a negation or a condition ("不要写成 …", "如果填 True 就会 …"; _negated, _conditional).
# Block blanks (a puzzle's body, host code) are statements, told in pieces and paraphrase: a stated
# expression that appears in a block fill, or calls what a block fill calls, is that fill; nothing
# is compared with a block blank otherwise (an exercise of block blanks only is judged by its
# `describes` claims alone).
STATED_FILL = True
STATED_TEXT_MAX = 20_000  # characters of an explanation read for a stated fill
_STATED_CODE_MAX = 240  # characters of one stated expression parsed
_STATED_CANDIDATES_MAX = 12  # stated expressions parsed per explanation
_STATED_FORMS_MAX = 400  # sub-expressions of one fill or template read (a part is no statement)
_DEFINITION_DEPTH = 4  # a defined name read through at most this many definitions
# A fill longer than this (characters) is compared whole, its parts not spelt one by one (each part
# is spelt through the definitions and _Ordered; the reference's expression fills are under 100).
_STATED_PARTS_MAX = 200
_STRONG_PHRASE = (
    r"我(在|的)?(这里|此处|空里|空中|空格里|填空处|填空里|这个空里?)?\s*(填|写|补)(的是|了|入|上|成|为|的)?(一个)?"
    r"|(填空|空格|空白|空位|这个空|空)(处|里|中|位置)?\s*(我)?\s*(填|写|补)?(的是|是|为|填了|写了|填入|填)"
    r"|我的(填空|填法)(是|为)?"
    r"|\b(the|my) (fill|blank) (is|was|reads|holds|contains)\b"
    r"|\bi (filled|fill)( it| the blank)?( in| with| as)?\b"
    r"|\bfilled (it |the blank )?(in )?with\b|\b(blank|fill)\s*[=:]")
# Without a subject, or a verb that may name any code ("I put 0 in the padding lanes"): a part of
# the template's own code after one is told, not given as the fill.
_WEAK_PHRASE = (r"(这里|此处)?(填的是|填了|填入|填上|填成|写的是|写成|补的是|补了|填)"
                r"|\bi (wrote|write|put|typed|entered)( it| the blank)?( in| with| as)?\b")
_STATED_PHRASE = re.compile(rf"(?P<strong>{_STRONG_PHRASE})|(?P<weak>{_WEAK_PHRASE})", re.IGNORECASE)
_STATED_LEAD = re.compile(r"[\s:：=＝“”\"'‘’「」『』]*")
_BARE_CODE = re.compile(rf"[\x20-\x5f\x61-\x7e]{{1,{_STATED_CODE_MAX}}}")  # printable ASCII, no backtick
_BARE_CUT = re.compile(r"[;]|[.,:](?=\s|$)|\s-\s|\s—")
_KNOWN_NAMES = frozenset({"tl", "triton", "torch", "math", "np", "float", "int", "min", "max", "abs", "inf", "nan"})
_INFINITE_NAMES = {"inf": math.inf, "nan": math.nan}


@dataclass(frozen=True)
class FillScope:
    """What an exercise's template says about its blanks, for reading the fill an explanation gives
    (fill_scope): which blanks are expressions, the names defined once from other names, the
    template's own expressions, the statement or call around each expression blank, its names."""
    expression: tuple[bool, ...]
    definitions: tuple[tuple[str, str], ...]
    parts: frozenset[str]
    around: tuple[tuple[int, str, str], ...]  # (blank, "assign" | "call", the target's or callee's source)
    around_key: tuple[tuple[int, str], ...]  # (blank, the blank's place: "value", "arg N" or "kw NAME")
    names: frozenset[str]
    callees: frozenset[str]  # what the template calls (`tl.where`): a function named, no fill


@functools.lru_cache(maxsize=32)
def fill_scope(template: str) -> FillScope | None:
    """The template's FillScope (None when it does not parse)."""
    try:
        tree = ast.parse(template)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    blanks = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "______"),
                    key=lambda n: (n.lineno, n.col_offset))
    block_ids = {id(s.value) for s in ast.walk(tree) if isinstance(s, ast.Expr) and isinstance(s.value, ast.Name)
                 and s.value.id == "______"}
    expression = tuple(id(b) not in block_ids for b in blanks)
    assigned: dict[str, list[ast.expr | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
            continue
        for target in (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)) else
                       [n for n in (node.optional_vars,) if n is not None] if isinstance(node, ast.withitem) else []):
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    assigned.setdefault(name.id, []).append(None)
    definitions = tuple((name, ast.unparse(values[0])) for name, values in assigned.items()
                        if len(values) == 1 and values[0] is not None
                        and not any(isinstance(n, ast.Name) and n.id == "______" for n in ast.walk(values[0])))
    scope = FillScope(expression, definitions, frozenset(), (), (), frozenset(), frozenset())
    parts = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and not isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)) \
                and not any(isinstance(n, ast.Name) and n.id == "______" for n in ast.walk(node)):
            parts.add(_stated_form(node, scope))
            if len(parts) >= 4 * _STATED_FORMS_MAX:
                break
    around, around_key = [], []
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for i, blank in enumerate(blanks, start=1):
        parent = parents.get(id(blank))
        if parent is None or not expression[i - 1]:
            continue
        if isinstance(parent, ast.keyword):
            call = parents.get(id(parent))
            if isinstance(call, ast.Call) and parent.arg is not None:
                around.append((i, "call", ast.unparse(call.func)))
                around_key.append((i, f"kw {parent.arg}"))
        elif isinstance(parent, ast.Call) and blank in parent.args:
            around.append((i, "call", ast.unparse(parent.func)))
            around_key.append((i, f"arg {parent.args.index(blank)}"))
        elif isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            around.append((i, "assign", parent.targets[0].id))
            around_key.append((i, "value"))
    names = frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id != "______")
    callees = frozenset(_stated_form(n.func, scope) for n in ast.walk(tree) if isinstance(n, ast.Call))
    return FillScope(expression, definitions, frozenset(parts), tuple(around), tuple(around_key), names, callees)


class _Valued(_Ordered):
    """_Ordered, with numbers by value: an int is the float it equals, `-1.0` one number, and the
    spellings of infinity and NaN (`float('-inf')`, `-math.inf`, `-tl.inf`?) numbers too."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            try:
                return ast.Constant(float(node.value))
            except OverflowError:
                return node
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.Constant(_INFINITE_NAMES[node.id]) if node.id in _INFINITE_NAMES else node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr in _INFINITE_NAMES and isinstance(node.value, ast.Name) \
                and node.value.id in ("math", "torch", "np"):
            return ast.Constant(_INFINITE_NAMES[node.attr])
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if (isinstance(node.func, ast.Name) and node.func.id == "float" and len(node.args) == 1 and not node.keywords
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, (str, float))):
            try:
                return ast.Constant(float(node.args[0].value))
            except ValueError:
                return node
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant) \
                and isinstance(node.operand.value, float):
            return ast.Constant(-node.operand.value if isinstance(node.op, ast.USub) else node.operand.value)
        return node


class _Defined(ast.NodeTransformer):
    """The names the template defines once read as their definitions (FillScope.definitions), each
    already read through the others' (_definition_sources), parsed afresh where it stands."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources

    def visit_Name(self, node: ast.Name) -> ast.AST:
        source = self.sources.get(node.id)
        if source is None or not isinstance(node.ctx, ast.Load):
            return node
        return ast.parse(source, mode="eval").body


@functools.lru_cache(maxsize=32)
def _definition_sources(definitions: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Each defined name's definition, read through the others' to _DEFINITION_DEPTH (the template's own)."""
    sources = dict(definitions)
    for _ in range(_DEFINITION_DEPTH - 1):
        sources = {name: ast.unparse(_Defined(sources).visit(ast.parse(source, mode="eval").body))
                   for name, source in dict(definitions).items()}
    return sources


def _stated_form(node: ast.expr, scope: FillScope) -> str:
    """One spelling of an expression for comparing a stated fill with a submitted one (FillScope: the
    template's definitions read through, then _Valued); "" for one too deep to spell."""
    try:
        return _spelt(ast.unparse(node), scope.definitions)
    except (RecursionError, ValueError, MemoryError):
        return ""


@functools.lru_cache(maxsize=2048)  # a fill's parts and the reference's are mostly the same
def _spelt(source: str, definitions: tuple[tuple[str, str], ...]) -> str:
    try:
        if len(source) > _ORDERED_MAX:  # _Ordered's cost grows with the square of a chain's length
            return source
        tree = _Defined(_definition_sources(definitions)).visit(ast.parse(source, mode="eval").body)
        if len(ast.unparse(tree)) > _ORDERED_MAX:
            tree = ast.parse(source, mode="eval").body
        return ast.unparse(ast.fix_missing_locations(_Valued().visit(tree)))
    except (RecursionError, ValueError, MemoryError, SyntaxError):
        return ""


def _parse_expression(code: str) -> ast.expr | None:
    if not code or len(code) > _STATED_CODE_MAX:
        return None
    try:
        return ast.parse(code.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _parse_statement(code: str) -> ast.stmt | None:
    if not code or len(code) > _STATED_CODE_MAX:
        return None
    try:
        body = ast.parse(code.strip()).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return body[0] if len(body) == 1 else None


def _subforms(node: ast.expr, scope: FillScope, constants: bool = True) -> set[str]:
    """The spellings of `node` and of its sub-expressions (at most _STATED_FORMS_MAX); without
    `constants`, a number inside it is none (`axis=0` of `tl.max(logits, axis=0)` is no fill)."""
    forms = set()
    for sub in itertools.islice(ast.walk(node), _STATED_FORMS_MAX):
        if not constants and sub is not node and isinstance(sub, ast.Constant):
            continue
        if isinstance(sub, ast.expr) and not isinstance(getattr(sub, "ctx", None), (ast.Store, ast.Del)):
            forms.add(_stated_form(sub, scope))
    return forms


@dataclass
class _Stated:
    start: int
    end: int
    code: str  # as written
    strong: bool  # a phrase with a subject ("我填的是", "the fill is"), or code given whole
    quoted: bool  # in backticks
    said: int  # where the phrase that gives it starts (the code's start when none)


def _stated_candidates(text: str) -> list[_Stated]:
    found: list[_Stated] = []
    for m in _STATED_PHRASE.finditer(text):
        if len(found) >= _STATED_CANDIDATES_MAX:
            break
        at = _STATED_LEAD.match(text, m.end()).end()  # type: ignore[union-attr]
        code = _code_at(text, at)
        if code is None:
            continue
        found.append(_Stated(at, code[1], code[0], m.group("strong") is not None, code[2], m.start()))
    first = text.lstrip().split("\n", 1)[0].strip()
    if first and len(found) < _STATED_CANDIDATES_MAX:
        bare = first.strip("`").strip().rstrip("。；;.，,")
        lead = text.find(first)
        node = _parse_expression(bare) if bare.isascii() else None
        if lead >= 0 and (node is not None or bare.isascii() and _parse_statement(bare) is not None):
            # code alone on the first line: the fill given first when it has a fill's shape (a name, a
            # constant, a comparison, a mask's logic) or is in backticks; a formula is told (`x - mean`)
            shaped = isinstance(node, (ast.Name, ast.Constant, ast.Compare, ast.BoolOp)) or \
                isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert))
            found.append(_Stated(lead, lead + len(first), bare, shaped or first.startswith("`"), first.startswith("`"),
                                 lead))
    return found


def _code_at(text: str, at: int) -> tuple[str, int, bool] | None:
    """The code that starts at text[at]: in backticks (its content), or bare ASCII code cut at the end
    of its clause (the longest start of it that parses). (code, its end, quoted)."""
    if text.startswith("`", at):
        ticks = len(text[at:at + 3]) - len(text[at:at + 3].lstrip("`"))
        close = text.find("`" * ticks, at + ticks, at + ticks + _STATED_CODE_MAX + 20)
        if close < 0:
            return None
        code = text[at + ticks:close]
        if ticks == 3:
            code = re.sub(r"^(python|py)\s*\n", "", code.strip())
        return code.strip(), close + ticks, True
    m = _BARE_CODE.match(text, at)
    if m is None:
        return None
    run = m.group()
    cut = _BARE_CUT.search(run)
    if cut is not None:
        run = run[:cut.start()]
    words = run.split(" ")
    for n in range(len(words), 0, -1)[:12]:
        code = " ".join(words[:n]).strip()
        if code and _parse_expression(code) is not None:
            if _MODIFIES.match(text, at + len(code)):
                return None  # "第 3 空是 grad_x 的起点": a word of the sentence, not the fill
            return code, at + len(code), False
    return None


_MODIFIES = re.compile(r"\s*(的|之|'s\b)")


def stated_mismatch(text: str, fills: Sequence[str | None], reference: Sequence[str | None] | None,
                    scope: FillScope, not_given: Callable[[_Stated], bool]) -> tuple[_Stated, int | None, str] | None:
    """The first code the explanation `text` gives as its fill that is not the submitted one (see
    STATED_FILL): what it says, the blank (None when not known) and the fill it was compared with; None
    when there is none. `not_given`: whether the explanation tells a candidate otherwise than as its
    fill (negated, conditional, hypothetical, an earlier attempt: the caller reads the clauses)."""
    trees: dict[int, ast.expr] = {}  # blank (1-based) -> the submitted fill, expression blanks
    blocks: list[ast.Module] = []
    for i, fill in enumerate(fills, start=1):
        if fill is None:
            return None  # a blank not extracted: nothing to compare with
        if i <= len(scope.expression) and not scope.expression[i - 1]:
            try:
                blocks.append(ast.parse(fill))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
            continue
        try:  # not _parse_expression: a submitted fill is read whatever its length
            trees[i] = ast.parse(fill, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    alike: dict[int, set[str]] = {i: {_stated_form(t, scope)} for i, t in trees.items()}
    if any("" in forms for forms in alike.values()):
        return None  # a fill too deep to read: nothing is compared with it
    parts: set[str] = set()
    for i, t in trees.items():
        if len(fills[i - 1] or "") <= _STATED_PARTS_MAX:  # a longer one is compared whole
            parts |= _subforms(t, scope, constants=False)
        if reference is not None and i <= len(reference) and reference[i - 1] is not None:
            ref = _parse_expression(reference[i - 1] or "")
            if ref is not None:
                alike[i].add(_stated_form(ref, scope))
                parts |= _subforms(ref, scope, constants=False)
    block_parts = set()
    block_calls = set()
    for block in blocks:
        for node in itertools.islice(ast.walk(block), _STATED_FORMS_MAX):
            if isinstance(node, ast.expr) and not isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
                block_parts.add(_stated_form(node, scope))
            if isinstance(node, ast.Call):
                block_calls.add(ast.unparse(node.func))
    for said in _stated_candidates(text):
        if not_given(said):
            continue
        given = _given_fills(said, scope, trees)
        for blank, node in given:
            form = _stated_form(node, scope)
            if not form:
                continue
            if (any(form in forms for forms in alike.values()) if blank is None else form in alike.get(blank, set())):
                continue
            if form in parts or form in block_parts or (isinstance(node, ast.Call)
                                                         and ast.unparse(node.func) in block_calls):
                continue  # a part of the submitted fill
            if blank is None and (form in scope.callees or not said.strong and form in scope.parts):
                continue  # the template's own code, told
            if blank is None and any(forms & _subforms(node, scope) for forms in alike.values()):
                continue  # the code around the submitted fill, told
            where = blank if blank is not None else (next(iter(trees)) if len(trees) == 1 and not blocks else None)
            fill = fills[where - 1] if where is not None else "\n".join(f or "" for f in fills)
            return said, where, fill or ""
    return None


STATED_FILL_CLAIM = "stated_fill"


def _given_fills(said: _Stated, scope: FillScope, trees: dict[int, ast.expr]) -> list[tuple[int | None, ast.expr]]:
    """What a stated piece of code gives as a fill: (the blank, when known; the expression). A template
    statement or call around an expression blank gives what stands in the blank's place; other code
    is given whole, for any blank; bare code that names what neither the template nor the fills name
    is no code (English words)."""
    node = _parse_expression(said.code)
    if isinstance(node, ast.Call) and _stated_form(node, scope) in scope.parts:
        return []  # a call of the template's, as it stands there
    if node is None:
        stmt = _parse_statement(said.code)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            return _in_blank_place(stmt.value, stmt.targets[0].id, scope)
        return []
    if not said.quoted:
        fill_names = {n.id for t in trees.values() for n in ast.walk(t) if isinstance(n, ast.Name)}
        if not all(n.id in scope.names or n.id in _KNOWN_NAMES or n.id in fill_names
                   for n in ast.walk(node) if isinstance(n, ast.Name)):
            return []
    placed = _in_blank_place(node, None, scope)
    return placed if placed else [(None, node)]


def _in_blank_place(node: ast.expr, target: str | None, scope: FillScope) -> list[tuple[int | None, ast.expr]]:
    out: list[tuple[int | None, ast.expr]] = []
    keys = dict(scope.around_key)
    for blank, kind, name in scope.around:
        key = keys[blank]
        if kind == "assign" and target == name:
            out.append((blank, node))
        elif kind == "call":
            call = node if target is None else node
            for sub in itertools.islice(ast.walk(call), _STATED_FORMS_MAX):
                if isinstance(sub, ast.Call) and ast.unparse(sub.func) == name:
                    if key.startswith("arg ") and int(key[4:]) < len(sub.args):
                        out.append((blank, sub.args[int(key[4:])]))
                    elif key.startswith("kw "):
                        out += [(blank, k.value) for k in sub.keywords if k.arg == key[3:]]
                    break
    return out


# The explanation quoting its own submitted expression fill (freetext's `said_by` is not read over an
# explanation that does): spaces aside first, then, where that fails, any stretch of the explanation
# that parses to the same expression once spelled alike (canonical source, operand order, numbers by
# value: `values!=0` is `values != 0.0`, `N > cols` is `cols < N`). Both lower-cased (the explanation
# is read lower-case). Bounded: stretches of at most twice the fill's length plus 8, starting and
# ending at a token, holding every name of the fill, _QUOTE_TRIES parses per explanation.
_QUOTE_TRIES = 600
_QUOTE_TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\d+(?:\.\d*)?(?:e[+-]?\d+)?|[^\sA-Za-z_0-9]")
_QUOTE_SEGMENT = re.compile(r"[\x20-\x5f\x61-\x7e]+")  # printable ASCII, no backtick
_QUOTE_GOES_ON = re.compile(r"\s*[-+*/%<>=!&|^.(\[@]")
_QUOTE_CAME_ON = re.compile(r"[-+*/%<>=!&|^~.@]\s*$")


def quotes_expression(text: str, code: str) -> bool:
    """Whether `text` (lower-case) gives the expression fill `code` (see the note above)."""
    code = code.strip().lower()
    if not code or "\n" in code or len(code) > _STATED_CODE_MAX:
        return False
    if re.sub(r"\s+", "", code) in re.sub(r"\s+", "", text):
        return True
    fill = _parse_expression(code)
    if fill is None:
        return False
    want = _spelt(ast.unparse(fill), ())
    if not want:
        return False
    names = {n.id for n in ast.walk(fill) if isinstance(n, ast.Name)}
    limit = 2 * len(code) + 8
    tries = 0
    for segment in _QUOTE_SEGMENT.finditer(text):
        tokens = [(m.start(), m.end()) for m in _QUOTE_TOKEN.finditer(segment.group())]
        words = segment.group()
        for i, (a, _) in enumerate(tokens):
            for _, b in tokens[i:]:
                if b - a > limit:
                    break
                piece = words[a:b]
                # the whole expression there, not a part of a longer one (`cols < n` of `cols < n - 1`)
                if _QUOTE_GOES_ON.match(words, b) or _QUOTE_CAME_ON.search(words, 0, a):
                    continue
                if not names <= set(re.findall(r"[a-z_][a-z_0-9]*", piece)):
                    continue
                tries += 1
                if tries > _QUOTE_TRIES:
                    return False
                node = _parse_expression(piece)
                if node is not None and _spelt(ast.unparse(node), ()) == want:
                    return True
    return False
