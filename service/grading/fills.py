"""Which expressions may fill a blank: names in scope, `tl.*` calls, tensor methods of names in
scope (`cols.to(tl.float32)`), operators and constants.

Checked on the syntax tree, before anything runs. `float("-inf")` and its kin count as numbers.
Everything else (imports, attribute walks,
lambdas, walrus, comprehensions, strings, subscripts) is refused with a message that says what
was found and what is allowed.
"""
from __future__ import annotations

import ast
from collections.abc import Set as AbstractSet

from service.grading.extract import BLANK

MAX_FILL_CHARS = 400
MAX_FILL_NODES = 120
MAX_FILL_DEPTH = 24
# What a fill may make Python compute before Triton sees a tensor (constexpr arithmetic runs as
# Python integers, in the sandbox, on every run): integer constants of at most 64 bits; `**` and
# `<<` only with a constant exponent or shift of at most 64, on a base that has no `**` or `<<`
# of its own, at most MAX_FILL_POWERS of them; tuples only as a call's argument, never an operand
# (`(0,) * (1 << 40)` is a 8 TiB tuple). A one-line fill then costs microseconds of arithmetic.
MAX_FILL_INT_BITS = 64
MAX_FILL_EXPONENT = 64
MAX_FILL_POWERS = 2

_ALLOWED = (
    ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.keyword, ast.Name,
    ast.Attribute, ast.Constant, ast.Tuple, ast.Load,
    ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd,
    ast.Invert, ast.Not, ast.UAdd, ast.USub,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
)
# The parts of triton.language a fill may use: element-wise math, comparisons, reductions,
# constructors and dtypes. Nothing that reaches modules, memory or the program's control.
TL_ALLOWED = frozenset({
    "where", "full", "zeros", "zeros_like", "full_like", "arange", "broadcast_to", "reshape", "expand_dims",
    "sum", "max", "min", "argmax", "argmin", "maximum", "minimum", "clamp", "abs", "exp", "exp2", "log", "log2",
    "sqrt", "rsqrt", "sin", "cos", "fma", "cdiv", "sigmoid", "softmax", "fdiv", "div_rn", "umulhi",
    "xor_sum", "cumsum", "cumprod", "floor", "ceil", "erf",
    "int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64",
})

# Methods of a Triton tensor that a fill may call on a name in scope (`cols.to(tl.float32) < N`):
# the same element-wise conversions, reductions and shape operations as TL_ALLOWED, one level only
# (the receiver is a plain name, never a chain), so they cost no more than the tl.* spelling.
TENSOR_METHODS = frozenset({
    "to", "sum", "max", "min", "argmax", "argmin", "reshape", "broadcast_to", "expand_dims", "cumsum",
    "cumprod", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sigmoid",
})

_NAMES = {
    ast.Lambda: "lambda", ast.NamedExpr: "海象运算符 :=", ast.ListComp: "列表推导式", ast.SetComp: "集合推导式",
    ast.DictComp: "字典推导式", ast.GeneratorExp: "生成器表达式", ast.Subscript: "下标 [...]", ast.Starred: "星号展开 *",
    ast.JoinedStr: "f-string", ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield from",
    ast.List: "列表", ast.Dict: "字典", ast.Set: "集合", ast.Slice: "切片", ast.MatMult: "@ 运算",
}


MAX_BLOCK_CHARS = 20_000
MAX_BLOCK_STATEMENTS = 400


def check_block_fill(fill: list[ast.stmt], source: str, *, blank_number: int = 1) -> str | None:
    """A block blank (a whole body) in an exercise whose fill policy is `any`: anything may run, in
    the sandbox, which is then the only defence; only its size is bounded."""
    prefix = f"第 {blank_number} 个填空"
    if not fill or any(isinstance(s, ast.Expr) and isinstance(s.value, ast.Name) and s.value.id == BLANK for s in fill):
        return f"{prefix}还没有填写（仍然是 ______）"
    if len(source) > MAX_BLOCK_CHARS:
        return f"{prefix}太长（{len(source)} 个字符，上限 {MAX_BLOCK_CHARS}）"
    if sum(1 for node in ast.walk(ast.Module(body=fill, type_ignores=[])) if isinstance(node, ast.stmt)) > MAX_BLOCK_STATEMENTS:
        return f"{prefix}的语句太多（上限 {MAX_BLOCK_STATEMENTS}）"
    return None


def check_fill(fill: ast.expr, source: str, *, allowed_names: AbstractSet[str], blank_number: int = 1) -> str | None:
    """None if the fill may run; otherwise the message for the student."""
    prefix = f"第 {blank_number} 个填空"
    if isinstance(fill, ast.Name) and fill.id == BLANK:
        return f"{prefix}还没有填写（仍然是 ______）"
    if len(source) > MAX_FILL_CHARS:
        return f"{prefix}太长（{len(source)} 个字符，上限 {MAX_FILL_CHARS}）：这里只需要一个简短的表达式"
    nodes = list(ast.walk(fill))
    if len(nodes) > MAX_FILL_NODES:
        return f"{prefix}太复杂（{len(nodes)} 个语法节点，上限 {MAX_FILL_NODES}）"
    if _depth(fill) > MAX_FILL_DEPTH:
        return f"{prefix}嵌套太深（上限 {MAX_FILL_DEPTH} 层）"
    costly = _costly(fill, nodes)
    if costly is not None:
        return f"{prefix}{costly}"
    rule = ("填空只能是一个表达式：作用域内的变量、tl.* 函数调用、作用域内变量的张量方法（如 cols.to(tl.float32)）、"
            "算术/比较/逻辑运算和数值常数")
    literal = {id(n) for call in nodes if _is_float_literal(call) for n in ast.walk(call)}
    methods = {id(call.func) for call in nodes if _is_tensor_method_call(call, allowed_names)}
    for node in nodes:
        if id(node) in literal:
            continue
        if not isinstance(node, _ALLOWED):
            what = _NAMES.get(type(node), type(node).__name__)
            return f"{prefix}中不允许使用 {what}。{rule}"
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool, type(None))):
            return f"{prefix}中不允许使用 {type(node.value).__name__} 常量 {node.value!r:.40}。{rule}"
        if isinstance(node, ast.Name) and node.id not in allowed_names:
            shown = ", ".join(sorted(allowed_names))
            return f"{prefix}中的名字 `{node.id[:40]}` 在这里不可用。可用的名字：{shown}"
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                return f"{prefix}中不允许访问以下划线开头的属性 `{node.attr[:40]}`"
            # One level, from a fixed list: tl's submodules re-export the standard library
            # (tl.core.builtins, tl.core.inspect.os, ...), so no deeper chain may be followed.
            if id(node) in methods:
                continue
            if not (isinstance(node.value, ast.Name) and node.value.id == "tl" and node.attr in TL_ALLOWED):
                return (f"{prefix}中只允许 tl.* 的数学、比较、归约函数和数据类型（如 tl.where、tl.full、tl.float32），"
                        f"以及作用域内变量的张量方法（如 cols.to(tl.float32)、x.sum(axis=0)），"
                        f"不允许 `{ast.unparse(node)[:60]}`")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Attribute):
                return f"{prefix}中只允许调用 tl.* 函数，不允许调用 `{ast.unparse(node.func)[:60]}`"
            if any(k.arg is None for k in node.keywords):
                return f"{prefix}中不允许 ** 展开参数"
    return None


def _is_tensor_method_call(node: ast.AST, allowed_names: AbstractSet[str]) -> bool:
    """`name.method(...)` with `name` in scope (not `tl`) and `method` in TENSOR_METHODS."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TENSOR_METHODS
            and isinstance(node.func.value, ast.Name) and node.func.value.id != "tl"
            and node.func.value.id in allowed_names)


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


def _costly(fill: ast.expr, nodes: list[ast.AST]) -> str | None:
    """Why the fill could cost more than a one-line expression should (see MAX_FILL_INT_BITS), or None."""
    for node in nodes:
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value.bit_length() > MAX_FILL_INT_BITS:
            return (f"中的整数常量太大（{node.value.bit_length()} 位，上限 {MAX_FILL_INT_BITS} 位）。"
                    f"(An integer constant of {node.value.bit_length()} bits: the limit is {MAX_FILL_INT_BITS}.)")
    growing = [n for n in nodes if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Pow, ast.LShift))]
    if len(growing) > MAX_FILL_POWERS:
        return (f"中的 ** 和 << 太多（{len(growing)} 个，上限 {MAX_FILL_POWERS}）。"
                f"(Too many ** and << operators: {len(growing)}, the limit is {MAX_FILL_POWERS}.)")
    for node in growing:
        symbol = "**" if isinstance(node.op, ast.Pow) else "<<"
        amount = _constant_number(node.right)
        if amount is None or (isinstance(amount, int) and abs(amount) > MAX_FILL_EXPONENT):
            return (f"中 {symbol} 的右边必须是不超过 {MAX_FILL_EXPONENT} 的数值常数（不能是变量或表达式），"
                    f"否则结果可以大到耗尽内存和时间。(The right side of {symbol} must be a number constant of at "
                    f"most {MAX_FILL_EXPONENT}: anything else can grow without bound.)")
        if any(isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Pow, ast.LShift)) for n in ast.walk(node.left)):
            return (f"中 {symbol} 的左边不能再含 ** 或 <<。(The left side of {symbol} may not contain ** or << "
                    f"itself: towers grow without bound.)")
    for node in nodes:
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp)):
            operands = [getattr(node, name) for name in ("left", "right", "operand", "test", "body", "orelse")
                        if hasattr(node, name)] + list(getattr(node, "comparators", [])) + list(getattr(node, "values", []))
            if any(isinstance(o, ast.Tuple) for o in operands):
                return ("中的元组只能作为 tl.* 函数的参数（例如形状），不能参与运算。"
                        "(A tuple may only be a tl.* call's argument, such as a shape, never an operand.)")
    return None


def _constant_number(node: ast.expr) -> int | float | None:
    """The value of a number constant, signs included (`-2`), or None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _constant_number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None
