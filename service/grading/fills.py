"""Which expressions may fill a blank: names in scope, `tl.*` calls, tensor methods of names in
scope, of call results and of operators (`cols.to(tl.float32)`, `(cols < N).to(tl.int1)`),
operators and constants.

Checked on the syntax tree, before anything runs. `float("-inf")` and its kin count as numbers.
A tuple or a list only as a call's argument (a shape: `tl.full([BLOCK], 1.0, tl.float32)`, as the
tutorials and TorchInductor write it). Everything else (imports, attribute walks,
lambdas, walrus, comprehensions, strings, subscripts) is refused with a message that says what
was found and what is allowed.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.metadata
import inspect
import threading
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, TypeGuard

from service.grading import host_fills
from service.grading.extract import BLANK, Extraction, Spill
from service.messages import render, service_catalogue

if TYPE_CHECKING:
    from service.exercises import Exercise

MAX_FILL_CHARS = 400
MAX_FILL_NODES = 120
MAX_FILL_DEPTH = 24
# What a fill may make Python compute before Triton sees a tensor (constexpr arithmetic runs as
# Python integers, in the sandbox, on every run): integer constants of at most 64 bits; `**` and
# `<<` only with a constant exponent or shift of at most 64, on a base that has no `**` or `<<`
# of its own, at most MAX_FILL_POWERS of them; tuples only as a call's argument, never an operand
# (`(0,) * (1 << 40)` is a 8 TiB tuple); lists the same (`tl.zeros([BLOCK], ...)`, the spelling of the
# Triton tutorials and of TorchInductor's generated kernels). A one-line fill then costs microseconds of arithmetic.
MAX_FILL_INT_BITS = 64
MAX_FILL_EXPONENT = 64
MAX_FILL_POWERS = 2

_ALLOWED = (
    ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword, ast.Name,
    ast.Attribute, ast.Constant, ast.Tuple, ast.List, ast.Load,
    ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd,
    ast.Invert, ast.Not, ast.UAdd, ast.USub,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
)
# The parts of triton.language a fill may use: element-wise math, comparisons, reductions,
# constructors, dtypes and the program's own index (`tl.program_id(0) * BLOCK`: a scalar read, as
# the template's own names are). Nothing that reaches modules, memory or the program's control.
TL_ALLOWED = frozenset({
    "where", "full", "zeros", "zeros_like", "full_like", "arange", "broadcast_to", "reshape", "expand_dims",
    "sum", "max", "min", "argmax", "argmin", "maximum", "minimum", "clamp", "abs", "exp", "exp2", "log", "log2",
    "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "fma", "cdiv", "sigmoid", "softmax", "fdiv", "div_rn", "umulhi",
    "xor_sum", "cumsum", "cumprod", "floor", "ceil", "erf", "program_id", "num_programs",
    "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64",
    # tl.cast(x, dtype) is x.to(dtype) spelled as a function (third-party kernels write it: tl.cast(stride, tl.int64))
    "cast",
})
# Python's min and max as Triton reads them in a kernel (the compiler's builtin namespace maps them to
# tl.core.builtin_min/builtin_max: of numbers, Python's; with a tensor, tl.minimum/tl.maximum element-wise):
# a CUDA port's `min(N - start, BLOCK)`. Called by name, with two or more positional arguments only.
BUILTIN_CALLS = frozenset({"min", "max"})
# The element-wise functions of triton.language.math, as third-party kernels spell them (tl.math.rsqrt,
# tl.math.exp2, tl.math.fma: the same functions as tl.rsqrt, ...): `tl.math.<one of these>` only, never
# `tl.math` itself or anything deeper (tl.math.core re-exports the rest of the language).
TL_MATH_ALLOWED = frozenset({
    "abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log", "log2", "rsqrt", "sin",
    "sqrt", "sqrt_rn", "umulhi",
})

# Methods of a Triton tensor that a fill may call (`cols.to(tl.float32) < N`): the same element-wise
# conversions, reductions and shape operations as TL_ALLOWED, so they cost no more than the tl.*
# spelling. The receiver is a tensor the fill could name anyway: a name in scope (not `tl`), the
# result of an allowed call (`tl.minimum(N - start, BLOCK).to(tl.float32)`, `x.to(tl.float32).sum()`)
# or of an operator (`(cols < N).to(tl.int1)`), each checked by the same rules, so a chain is as
# bounded as the fill (MAX_FILL_NODES, MAX_FILL_DEPTH). Never an attribute (`tl.float32`, `tl.sum`,
# `tl.core`: dtypes, functions and modules, not tensors), a constant or a tuple.
TENSOR_METHODS = frozenset({
    "to", "sum", "max", "min", "argmax", "argmin", "reshape", "broadcast_to", "expand_dims", "cumsum",
    "cumprod", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sigmoid",
})

# What a refused construct is called: a catalogue code (fills.node.*), or a word that reads the same in both languages.
_NAMES: dict[type, str] = {
    ast.Lambda: "lambda", ast.NamedExpr: "fills.node.walrus", ast.ListComp: "fills.node.listcomp",
    ast.SetComp: "fills.node.setcomp", ast.DictComp: "fills.node.dictcomp", ast.GeneratorExp: "fills.node.generator",
    ast.Subscript: "fills.node.subscript", ast.Starred: "fills.node.starred", ast.JoinedStr: "f-string",
    ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield from",
    ast.Dict: "fills.node.dict", ast.Set: "fills.node.set", ast.Slice: "fills.node.slice",
    ast.MatMult: "fills.node.matmul",
}


MAX_BLOCK_CHARS = 20_000
MAX_BLOCK_STATEMENTS = 400


def check_block_fill(fill: list[ast.stmt], source: str, *, blank_number: int = 1, language: str = "zh") -> str | None:
    """A block blank (a whole body) in an exercise whose fill policy is `any`: anything may run, in
    the sandbox, which is then the only defence; only its size is bounded."""
    if not fill or any(isinstance(s, ast.Expr) and isinstance(s.value, ast.Name) and s.value.id == BLANK for s in fill):
        return render("fills.unfilled", language, blank=blank_number)
    if len(source) > MAX_BLOCK_CHARS:
        return render("fills.block_too_long", language, blank=blank_number, chars=len(source), limit=MAX_BLOCK_CHARS)
    statements = sum(1 for node in ast.walk(ast.Module(body=fill, type_ignores=[])) if isinstance(node, ast.stmt))
    if statements > MAX_BLOCK_STATEMENTS:
        return render("fills.block_too_many_statements", language, blank=blank_number, limit=MAX_BLOCK_STATEMENTS)
    return None


def check_fill(fill: ast.expr, source: str, *, allowed_names: AbstractSet[str], blank_number: int = 1,
               language: str = "zh") -> str | None:
    """None if the fill may run; otherwise the message for the student, in `language`."""
    refused = _refusal(fill, source, allowed_names)
    if refused is None:
        return None
    code, params = refused
    if "what" in params and params["what"] in service_catalogue():
        params["what"] = render(str(params["what"]), language)
    if code in ("fills.not_allowed", "fills.constant"):
        params["rule"] = render("fills.rule", language)
    return render(code, language, blank=blank_number, **params)


def _refusal(fill: ast.expr, source: str, allowed_names: AbstractSet[str]) -> tuple[str, dict[str, object]] | None:
    """Why the fill may not run, as a message code and its parameters (less the blank's number), or None."""
    if isinstance(fill, ast.Name) and fill.id == BLANK:
        return "fills.unfilled", {}
    if len(source) > MAX_FILL_CHARS:
        return "fills.too_long", {"chars": len(source), "limit": MAX_FILL_CHARS}
    nodes = list(ast.walk(fill))
    if len(nodes) > MAX_FILL_NODES:
        return "fills.too_complex", {"nodes": len(nodes), "limit": MAX_FILL_NODES}
    if _depth(fill) > MAX_FILL_DEPTH:
        return "fills.too_deep", {"limit": MAX_FILL_DEPTH}
    costly = _costly(fill, nodes)
    if costly is not None:
        return costly
    literal = {id(n) for call in nodes if _is_float_literal(call) for n in ast.walk(call)}
    math = {id(part) for node in nodes if _is_tl_math(node) for part in (node, node.value)}
    methods = {id(call.func) for call in nodes if _is_tensor_method_call(call, allowed_names)}
    builtin = {id(call.func) for call in nodes if _is_builtin_call(call)}
    called = {id(call.func) for call in nodes if isinstance(call, ast.Call)}
    dtypes = {id(part) for node in nodes if id(node) not in called and _is_dtype_of_name(node, allowed_names)
              for part in ast.walk(node) if isinstance(part, ast.Attribute)}
    for node in nodes:
        if id(node) not in literal and isinstance(node, ast.Call):
            refused = None if id(node.func) in math else _method_refusal(node, methods)
            if refused is not None:
                return refused
    for node in nodes:
        if id(node) in literal:
            continue
        if not isinstance(node, _ALLOWED):
            return "fills.not_allowed", {"what": _NAMES.get(type(node), type(node).__name__)}
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool, type(None))):
            return "fills.constant", {"type": type(node.value).__name__, "value": f"{node.value!r:.40}"}
        if isinstance(node, ast.Name) and node.id not in allowed_names and id(node) not in builtin:
            return "fills.unknown_name", {"name": node.id[:40], "names": ", ".join(sorted(allowed_names))}
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                return "fills.private_attribute", {"attr": node.attr[:40]}
            # One level, from a fixed list: tl's submodules re-export the standard library
            # (tl.core.builtins, tl.core.inspect.os, ...), so no deeper chain may be followed.
            if id(node) in methods or id(node) in math or id(node) in dtypes:
                continue
            if not (isinstance(node.value, ast.Name) and node.value.id == "tl" and node.attr in TL_ALLOWED):
                return "fills.attribute", {"expr": ast.unparse(node)[:60]}
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Attribute) and id(node.func) not in builtin:
                return "fills.call", {"expr": ast.unparse(node.func)[:60]}
            if any(k.arg is None for k in node.keywords):
                return "fills.double_star", {}
            private = next((k.arg for k in node.keywords if k.arg is not None and k.arg.startswith("_")), None)
            if private is not None:  # Triton's own plumbing (`_semantic=`, `_builder=`), never an argument of a fill
                return "fills.private_keyword", {"keyword": private[:40]}
    return None


def _is_builtin_call(node: ast.AST) -> TypeGuard[ast.Call]:
    """`min(a, b, ...)` / `max(a, b, ...)`: BUILTIN_CALLS by name, two or more positional arguments, no keywords."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in BUILTIN_CALLS
            and len(node.args) >= 2 and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args))


def _is_tl_math(node: ast.AST) -> TypeGuard[ast.Attribute]:
    """`tl.math.<f>` with f in TL_MATH_ALLOWED."""
    return (isinstance(node, ast.Attribute) and node.attr in TL_MATH_ALLOWED
            and isinstance(node.value, ast.Attribute) and node.value.attr == "math"
            and isinstance(node.value.value, ast.Name) and node.value.value.id == "tl")


def _is_dtype_of_name(node: ast.AST, allowed_names: AbstractSet[str]) -> bool:
    """`x.dtype` or `x.dtype.element_ty` of a name in scope (not `tl`): a tensor's or a pointer's dtype,
    as third-party kernels pass it (`tl.zeros([BLOCK], dtype=x.dtype.element_ty)`, `.to(z.dtype.element_ty)`).
    A dtype object, never called (the caller leaves out a call's function) and nothing deeper."""
    if isinstance(node, ast.Attribute) and node.attr == "element_ty":
        node = node.value
    return (isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name)
            and node.value.id != "tl" and node.value.id in allowed_names)


def _is_tensor_method_call(node: ast.AST, allowed_names: AbstractSet[str]) -> TypeGuard[ast.Call]:
    """`receiver.method(...)` with `method` in TENSOR_METHODS and a receiver that is a tensor (_is_receiver)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TENSOR_METHODS
            and _is_receiver(node.func.value, allowed_names))


def _is_receiver(node: ast.expr, allowed_names: AbstractSet[str]) -> bool:
    """What a tensor method may be called on: a name in scope other than `tl`; a call (the walk then
    holds it to the rules: a tl.* function or a tensor method, `float("inf")` excepted, a number);
    an operator's result; a conditional or `and`/`or` whose every branch is one of these. The
    objects an attribute reaches (tl.float32, tl.sum, tl.core) are not tensors."""
    if isinstance(node, ast.Name):
        return node.id != "tl" and node.id in allowed_names
    if isinstance(node, ast.Call):
        return not _is_float_literal(node)
    if isinstance(node, ast.IfExp):
        return _is_receiver(node.body, allowed_names) and _is_receiver(node.orelse, allowed_names)
    if isinstance(node, ast.BoolOp):
        return all(_is_receiver(value, allowed_names) for value in node.values)
    return isinstance(node, (ast.Compare, ast.BinOp, ast.UnaryOp))


def _is_dotted(node: ast.expr) -> bool:
    """A dotted name, `a.b.c`: a module path or an object's attribute, not a call's result."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _method_refusal(call: ast.Call, methods: AbstractSet[int]) -> tuple[str, dict[str, object]] | None:
    """Why a method call on something other than a name may not run, said as such: a method off the
    list (`tl.arange(0, BLOCK).data_ptr()`) or a listed one on what is not a tensor (`tl.float32.to(...)`).
    A method on a name (`cols.data_ptr()`, `torch.sum(x)`), a tl.* function and a private attribute are
    left to the attribute rules (their messages are the same as before the receiver could be a call)."""
    func = call.func
    if not isinstance(func, ast.Attribute) or id(func) in methods or func.attr.startswith("_") \
            or isinstance(func.value, ast.Name):
        return None
    if func.attr not in TENSOR_METHODS:
        if _is_dotted(func.value):  # a module's function (`tl.extra.cuda.libdevice.pow`), not a method
            return "fills.attribute", {"expr": ast.unparse(func)[:60]}
        return "fills.method", {"method": func.attr[:40], "expr": ast.unparse(func)[:60],
                                "methods": ", ".join(sorted(TENSOR_METHODS))}
    return "fills.method_receiver", {"method": func.attr, "expr": ast.unparse(func.value)[:60]}


_FLOAT_WORDS = frozenset({"inf", "-inf", "+inf", "infinity", "-infinity", "+infinity", "nan"})


def _is_float_literal(node: ast.AST) -> bool:
    """`float("-inf")`, `float("inf")`, `float("nan")`: the idiomatic spelling of a constant
    (softmax pads with -inf), so it counts as a number rather than a call outside tl."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float"
            and not node.keywords and len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str) and node.args[0].value.strip().lower() in _FLOAT_WORDS)


def _depth(node: ast.AST) -> int:
    children = list(ast.iter_child_nodes(node))
    return 1 + (max(map(_depth, children)) if children else 0)


def _costly(fill: ast.expr, nodes: list[ast.AST]) -> tuple[str, dict[str, object]] | None:
    """Why the fill could cost more than a one-line expression should (see MAX_FILL_INT_BITS), or None."""
    for node in nodes:
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value.bit_length() > MAX_FILL_INT_BITS:
            return "fills.int_too_big", {"bits": node.value.bit_length(), "limit": MAX_FILL_INT_BITS}
    growing = [n for n in nodes if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Pow, ast.LShift))]
    if len(growing) > MAX_FILL_POWERS:
        return "fills.too_many_powers", {"count": len(growing), "limit": MAX_FILL_POWERS}
    for node in growing:
        symbol = "**" if isinstance(node.op, ast.Pow) else "<<"
        amount = _constant_number(node.right)
        if amount is None or (isinstance(amount, int) and abs(amount) > MAX_FILL_EXPONENT):
            return "fills.exponent", {"symbol": symbol, "limit": MAX_FILL_EXPONENT}
        if any(isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Pow, ast.LShift)) for n in ast.walk(node.left)):
            return "fills.tower", {"symbol": symbol}
    for node in nodes:
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp)):
            operands = ([getattr(node, name) for name in ("left", "right", "operand", "test", "body", "orelse")
                         if hasattr(node, name)]
                        + list(getattr(node, "comparators", [])) + list(getattr(node, "values", [])))
            if any(isinstance(o, (ast.Tuple, ast.List)) for o in operands):
                return "fills.tuple_operand", {}
    return None


def _constant_number(node: ast.expr) -> int | float | None:
    """The value of a number constant, signs included (`-2`), or None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _constant_number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value  # int or float exactly: a Constant's value is never another subclass
    return None


def rejected_fill(exercise: Exercise, extraction: Extraction, language: str) -> str | None:
    """Why the fills may not run (in `language`), or None: a block where an expression goes, an
    unfilled blank, an expression outside the allowed set, or host code that computes the result
    itself where the exercise declares what its host code may do (host_fills.py)."""
    return fill_refusal(exercise, extraction, language)[0]


def fill_refusal(exercise: Exercise, extraction: Extraction,
                 language: str) -> tuple[str | None, host_fills.Finding | None]:
    """rejected_fill's message, and the host-code finding when that is the reason (its diagnosis
    goes into the report)."""
    for index, (fill, source) in enumerate(zip(extraction.fills, extraction.fill_sources)):
        assert fill is not None and source is not None  # called only when extraction found every blank
        if (spill := extraction.spills.get(index)) is not None:
            return spilled_message(spill, blank_number=index + 1, language=language), None
        if isinstance(fill, list):
            if exercise.spec.fill_policy != "any":
                return render("fills.not_an_expression", language, blank=index + 1), None
            message = check_block_fill(fill, source, blank_number=index + 1, language=language)
        elif exercise.spec.fill_policy == "any":
            unfilled = isinstance(fill, ast.Name) and fill.id == "______"
            message = render("fills.unfilled", language, blank=index + 1) if unfilled else None
        else:
            message = check_fill(fill, source, allowed_names=exercise.blank_scopes[index], blank_number=index + 1,
                                 language=language)
        if message is not None:
            return message, None
    finding = host_fills.check(exercise, extraction)
    return (finding.message(language) if finding is not None else None), finding


# The most of a spilled fill a message quotes (a fill of thousands of arguments is not repeated back).
SPILL_QUOTE_CHARS = 120
# The most of one part a message names (extract.Spill.kinds), and how many parts after the first.
SPILL_PART_CHARS = 60
SPILL_PARTS_NAMED = 3


def _quoted(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def spilled_message(spill: Spill, *, blank_number: int, language: str) -> str:
    """A blank that is one argument (element) filled with several (extract.Spill): one expression
    goes there; where they are plain arguments, parentheses would make them one tuple; where a
    keyword argument is among them, each part is named for what it is (a keyword is no expression)."""
    text = _quoted(spill.source, SPILL_QUOTE_CHARS)
    if spill.keywords:
        return _keyword_spill_message(spill, blank_number=blank_number, text=text, language=language)
    advice = render("fills.spilled.as_tuple" if spill.as_tuple else "fills.spilled.one", language, text=text)
    return render("fills.spilled.elements" if spill.elements else "fills.spilled.arguments", language,
                  blank=blank_number, count=len(spill.parts), text=text, advice=advice)


def _keyword_spill_message(spill: Spill, *, blank_number: int, text: str, language: str) -> str:
    """`x, sem="relaxed"` in `atomic_add(p, ______)`: the expression `x` followed by the keyword
    argument `sem='relaxed'`, which the template's call does not pass; write only `x`."""
    def part(kind: str, source: str) -> str:
        return render(f"fills.spilled.part.{kind}", language, text=_quoted(source, SPILL_PART_CHARS),
                      name=source.split("=", 1)[0] if kind == "repeated_keyword" else "")

    first = part(spill.kinds[0], spill.parts[0])
    rest = [part(kind, source) for kind, source in zip(spill.kinds[1:SPILL_PARTS_NAMED + 1],
                                                        spill.parts[1:SPILL_PARTS_NAMED + 1])]
    if len(spill.parts) > SPILL_PARTS_NAMED + 1:
        rest.append(render("fills.spilled.more", language, count=len(spill.parts) - SPILL_PARTS_NAMED - 1))
    parts = render("fills.spilled.followed", language, first=first, rest=rest) if rest else first
    absent = [f"`{_quoted(source.split('=', 1)[0], SPILL_PART_CHARS)}=`"
              for kind, source in zip(spill.kinds, spill.parts) if kind == "keyword"][:SPILL_PARTS_NAMED]
    note = render("fills.spilled.not_passed", language, names=absent) if absent else ""
    if spill.kinds[0] == "named":  # `val=x` where the blank is: its value is the fill
        advice = render("fills.spilled.value", language,
                        value=_quoted(spill.parts[0].split("=", 1)[1], SPILL_PART_CHARS))
    elif spill.kinds[0] == "expression":
        advice = render("fills.spilled.only", language, value=_quoted(spill.parts[0], SPILL_PART_CHARS))
    else:
        advice = render("fills.spilled.one", language, text=text)
    return render("fills.spilled.keywords", language, blank=blank_number, text=text, parts=parts, note=note,
                  advice=advice)


def builds_block_pointer(fills: Sequence[ast.expr | list[ast.stmt] | None]) -> bool:
    """A fill that calls make_block_ptr (tl.make_block_ptr(...), or the name imported on its own)."""
    for fill in fills:
        for root in fill if isinstance(fill, list) else [fill] if fill is not None else []:
            for node in ast.walk(root):
                if isinstance(node, ast.Attribute) and node.attr == "make_block_ptr" \
                        or isinstance(node, ast.Name) and node.id == "make_block_ptr":
                    return True
    return False


# The trusted side imports triton only here, lazily, from grading threads that start together (a warm pool of
# graders, the CLI's --jobs): two first imports at once met Triton's own import cycle half done ("cannot import
# name 'autotune' from partially initialized module 'triton.runtime'", a _DeadlockError), and the failure was
# cached for the process: block_pointers_removed() False, so a block-pointer kernel scored 0 on the interpreter
# where it is not gradable, and _interpreter_source() raised into the grading. One import at a time.
_TRITON_IMPORT = threading.Lock()


@functools.cache
def block_pointers_removed() -> bool:
    """This Triton has removed block pointers (3.9: make_block_ptr raises NotImplementedError; the
    GPU hosts' 3.6 has them). The interpreter's sandbox runs this same Triton, so a kernel built on
    them cannot run here whatever its merit. Read from the function's source: no kernel to launch."""
    try:
        with _TRITON_IMPORT:
            import triton.language as tl

        return "NotImplementedError" in inspect.getsource(tl.core.make_block_ptr)
    except (ImportError, AttributeError, OSError, TypeError):
        return False


@dataclasses.dataclass(frozen=True)
class InterpreterGap:
    """A construct GPUs run (Triton 3.6 there) that the interpreter's Triton cannot: grading it here
    would score the interpreter, not the kernel (probed: tl.extra.cuda.libdevice.exp and a float
    tl.atomic_xchg are right on an H200 and raise inside the 3.9 interpreter)."""

    code: str  # names the construct and what to write instead: grading.gap.<code> (zh, en)
    names: frozenset[str]  # an attribute, name or string constant in a fill that uses it
    error: str | None  # the interpreter's error when only a run shows it (a dtype); None: the name alone
    message: str = "grading.interpreter_gap"  # the report's words around the construct
    # Only a pass is the interpreter's to doubt (a device the interpreter does not have): a run that
    # fails here fails on a GPU too, and is graded. `used_by` then looks at calls only (below).
    on_pass: bool = False

    def used_by(self, fills: Sequence[ast.expr | list[ast.stmt] | None]) -> bool:
        roots = [root for fill in fills for root in (fill if isinstance(fill, list) else [fill] if fill else [])]
        if self.on_pass:
            return any(_moves_to(node, self.names) for root in roots for node in ast.walk(root))
        return any(isinstance(node, ast.Attribute) and node.attr in self.names
                   or isinstance(node, ast.Name) and node.id in self.names
                   or isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in self.names
                   for root in roots for node in ast.walk(root))


def _moves_to(node: ast.AST, devices: frozenset[str]) -> bool:
    """A call that puts a tensor on one of `devices`: `t.cpu()`, `t.to("cpu")`, `f(..., device="cpu")`
    (a device named in a string elsewhere, or a print of `t.cpu()`'s text, moves nothing that is returned
    either, but a call is what can)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in devices:
        return True
    named = [k.value for k in node.keywords if k.arg == "device"]
    if isinstance(func, ast.Attribute) and func.attr == "to" and node.args:
        named.append(node.args[0])
    return any(isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value.split(":")[0] in devices
               for v in named)


@functools.cache
def interpreter_gaps() -> tuple[InterpreterGap, ...]:
    """The gaps of the interpreter installed here, read from its source (a later Triton may close them):
    once per process (every grading on the interpreter asks; the source is 75 KB to search)."""
    source = _interpreter_source()
    gaps = []
    if "libdevice" not in source:  # 3.9 patches tl, tl.core and tl.math only (interpreter.py, _patch_lang)
        gaps.append(InterpreterGap("libdevice", frozenset({"libdevice"}), None))
    gaps.append(InterpreterGap("atomic_xchg_float", frozenset({"atomic_xchg"}), "ValueError('Unsupported data type')"))
    # The interpreter keeps every tensor on the CPU (device="cuda" included), so a fill that moves
    # a result there (var.cpu(), .to("cpu")) is right here and, on a GPU, meets the lesson's
    # assert_close with a GPU tensor: a device mismatch only a GPU shows.
    gaps.append(InterpreterGap("cpu_device", frozenset({"cpu"}), None, message="grading.interpreter_gap_device",
                               on_pass=True))
    return tuple(gaps)


@functools.cache
def _interpreter_source() -> str:
    try:
        with _TRITON_IMPORT:
            import triton.runtime.interpreter as interpreter

        return inspect.getsource(interpreter)
    except (ImportError, OSError, TypeError):
        return ""


def triton_version() -> str:
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return "?"
