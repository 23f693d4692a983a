"""Host fills that compute the result themselves, refused before anything runs.

A blank outside every `@triton.jit` function is Python in the student's process (host_blanks.py).
Where the kernel fills are the solution's, nothing but the student's own run grades it, so a
block that launches the kernel (the launch count is met) and then returns `x.mean(1), x.var(1)`
earned every code point (SECURITY.md, item 5); a further run of the student's host code can be
told from its own (item 4). This is a rule on the fills' syntax trees instead, from what the
exercise declares (`host_code` in exercise.yaml): the entry point's tensors whose values only a
kernel may read (`inputs`). In the program the template and the fills make together:

1. `introspects`: a host fill may not reach the interpreter's inside: imports, `eval`/`exec`,
   `globals()`/`vars()`/`getattr`, frames (`f_locals`, `currentframe`), the garbage collector,
   attributes that start with `_`, the cell's kernels' own attributes (`kernel.src`, `kernel.fn`),
   Triton's knobs (launch hooks), file loaders, classes (a torch function mode is handed every
   tensor of the calls it sees), `type` (a class by another name, `type(name, bases, namespace)`,
   and an object's class, whose methods are every instance's), assignments to an attribute
   (monkeypatching: `type(kernel).run = spy` replaces the launch, `torch.Tensor.stride = spy` a
   call the template makes with the input), and the APIs that register code torch calls later with
   the tensors it sees (`torch.library`, `torch.overrides`, `register_*`, `*_hook(s)`), and a standard
   library module reached as an attribute (`torch.serialization.io.FileIO`), a builtin that rule 2 trusts
   with an input bound again (`len = lambda t: t.var(1)`), and `str.format`
   (`'{0.__traceback__.tb_frame.f_locals[x]}'.format(e)` walks attributes named in a string) and operator's
   getters (`attrgetter`), a `match` statement (its class patterns read attributes by name), and any module of
   torch or Triton reached as an attribute other than the namespaces an honest combine uses (MODULE_ATTRS:
   `torch.autograd.profiler_util.attrgetter`). These read an
   input by another route (the caller's frame, a replaced call the template makes with it) or tell
   the graded run from another (item 4: the kernel's source).
1b. `changes_launch` (checked after rule 1): the launches rules 2 and 3 trust by the kernel's name are the
   lesson's. A host fill names a kernel only to launch it (`kernel[grid](...)`: no alias, no argument, no def,
   parameter or assignment under its name), binds none of the template's module-level names (kernels, host
   functions, modules) nor the names the template's launch reads other than the inputs and the buffers it writes
   (`M`, `N`, `block`, `grid`); an input only to a shape-keeping conversion of itself (`x = x.contiguous()`, not
   `x.as_strided(...)`, whose rows then overlap); and where the template launches a kernel itself, a host fill
   launches it only in the same function with the same arguments (the grid may differ). Each was a route to 3/3
   code points beside the right kernel fill (red team 9): a dict under the kernel's name whose entry, a host
   function, the template's launch handed x; a kernel of the fill's own under that name; the cell's kernel
   launched with one element per row, which copies x into a buffer rule 2 takes as the kernel's output.
2. `reads_input`: an input's values may only be handed to a launch of the cell's kernels. Host
   code may read its metadata (`x.shape`, `x.stride(0)`, `x.dtype`, `x.device`, `x.numel()`),
   allocate like it (`torch.empty_like(x)`, `x.new_zeros(M)`, `t.to(x)` where t is a tensor: on a class or an
   operator, `torch.Tensor.to(x, torch.float64)` and `torch.ops.aten.to(x)` are x itself), and name it again
   (`x = x.contiguous()`: a view or a conversion is the input still, held to the same rule);
   anything else that touches its values in a host fill (`x.mean(1)`, `torch.var_mean(x, 1)`,
   `x.double().var(1)`, `(x - x.mean(1, keepdim=True)).pow(2).mean(1)`, `torch.einsum("ij->i", x)`,
   `x @ w`, `x * 2`, `sumsqs.copy_(...)` of any of these, `x.mul_(2)`) is the host computing with
   them. An input's name means the input in every host function of the cell (a combine that reads
   the given check's global `x`). A callable grid gets the launch's arguments (`meta['x']`): where
   a launch passes an input, a host fill's grid may read only the kernel's other parameters.
3. `not_from_kernel`: every value the entry point returns must depend on what a launch of the
   cell's kernels wrote (a buffer passed to the launch, after it), followed through assignments,
   in-place writes (`zero_()`, `copy_()`, `fill_()` overwrite), branches and calls of the cell's
   own host functions (the combine). An early return of anything else, or a kernel's output
   overwritten before it is used, is refused. This follows dependence, not arithmetic:
   `var + 0 * sums` depends on sums, so rule 2 is what stops an answer computed on the host.

Template code is never refused (it is the lesson's), but its assignments carry an input (and a
launch's outputs) to the fills. A finding names the blank, quotes the statement and says why
(messages `host_fills.*`, zh and en); the pipeline refuses the fills as it refuses an expression
outside the allow-list, and adds the diagnosis `host_<rule>` with the same words.
"""
from __future__ import annotations

import ast
import dataclasses
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TypeAlias

from service.exercises import Exercise
from service.exercises.blanks import BLANK
from service.grading import syntax
from service.grading.extract import MAX_FILL_NESTING, Extraction
from service.grading.host_blanks import _is_jit, host_blanks
from service.grading.module_names import MODULE_NAMES
from service.messages import render
from service.report import Diagnosis

# `too_complex`: the rules could not follow the host code to its end (Python's recursion limit, or rule 3's
# STEP_BUDGET): refused, never read as "nothing found" (red team 10).
RULES = ("introspects", "changes_launch", "reads_input", "not_from_kernel", "too_complex")

# What host code may read of an input without reading its values.
METADATA_ATTRS = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "itemsize", "nbytes",
                            "requires_grad", "is_leaf"})
METADATA_METHODS = frozenset({"size", "stride", "numel", "nelement", "dim", "ndimension", "element_size",
                              "is_contiguous", "is_floating_point", "is_complex", "get_device"})
# Allocations shaped like the receiver (x.new_zeros(M)) or like an argument (torch.empty_like(x)).
NEW_METHODS = frozenset({"new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided"})
LIKE_FUNCTIONS = frozenset({"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like",
                            "randint_like"})
# Methods whose tensor argument lends only its dtype, device or shape (t.to(x), t.view_as(x)).
SHAPE_ARGUMENT_METHODS = frozenset({"to", "type_as", "view_as", "reshape_as", "expand_as"})
# Views and conversions: the input still, held to the same rule wherever it goes.
VIEW_METHODS = frozenset({"contiguous", "to", "float", "double", "half", "bfloat16", "cuda", "cpu", "view",
                          "view_as", "reshape", "reshape_as", "clone", "detach", "expand", "expand_as", "flatten",
                          "squeeze", "unsqueeze", "t", "transpose", "permute", "as_strided", "narrow", "select",
                          "unflatten", "movedim"})
VIEW_ATTRS = frozenset({"data", "T", "mT", "H", "mH"})
# What an input may be bound to again in a host fill where the template launches the kernel: itself, converted,
# with its shape (its values and layout as the launch reads them: x.stride(0) is its rows' stride still).
SAME_SHAPE_CONVERSIONS = frozenset({"contiguous", "clone", "detach", "float", "double", "half", "bfloat16", "to",
                                    "cpu", "cuda"})
# Builtins that take an input without computing a value from it (print writes a debugging line to the standard
# output, nothing returns: _harmless_builtin). Not `type`: rule 1 refuses it (a class made without a class
# statement, `type(kernel)` reaching the launcher).
HARMLESS_BUILTINS = frozenset({"isinstance", "len", "id", "print"})

# Rule 1: routes to an input other than its name, and to what tells one run from another.
INTROSPECTION_NAMES = frozenset({
    "eval", "exec", "compile", "__import__", "globals", "locals", "vars", "getattr", "setattr", "delattr",
    "open", "breakpoint", "input", "dir", "memoryview", "__builtins__",
    "sys", "inspect", "gc", "os", "builtins", "importlib", "ctypes", "traceback", "types", "weakref",
})
INTROSPECTION_ATTRS = INTROSPECTION_NAMES | frozenset({
    "f_back", "f_locals", "f_globals", "f_builtins", "f_code", "f_trace", "gi_frame", "gi_code", "cr_frame",
    "ag_frame", "tb_frame", "tb_next", "co_consts", "currentframe", "getframeinfo", "getouterframes",
    "getinnerframes", "stack", "trace", "getsource", "getsourcelines", "getmembers", "getmodule",
    "getclosurevars", "get_objects", "get_referrers", "get_referents", "modules", "settrace", "setprofile",
    "exc_info", "load", "from_file", "fromfile", "load_file", "read_text", "read_bytes", "loadtxt", "memmap",
    "data_ptr", "untyped_storage", "storage", "knobs", "threading", "multiprocessing", "subprocess", "signal",
    "atexit", "pickle", "marshal", "dis", "linecache",
    # code that torch runs with the tensors of calls it sees: a torch function or dispatch mode, an operator's
    # implementation registered anew, autograd's hooks on saved tensors (registration APIs: _is_hook below)
    "overrides", "library", "hooks",
    # file readers that no module name above reaches (numpy's text loaders, io's raw file)
    "FileIO", "genfromtxt", "fromregex",
    # str.format looks up the attributes and items its fields name, underscores and all, out of rule 1's sight:
    # '{0.__traceback__.tb_frame.f_locals[x]}'.format(e) is the caller's x as text (red team 9: 3/3 code points)
    "format", "format_map", "vformat",
    # the same lookup by a dotted string, in operator's getters (torch.autograd.profiler_util.attrgetter; red team 10)
    "attrgetter", "itemgetter", "methodcaller",
})
# A standard-library module reached as another module's attribute (`torch.serialization.io.FileIO(path)` reads
# the job's input file; `torch.functools`, `torch.threading`): refused by its name, as an import would be,
# except the names that are also honest torch or Triton attributes (`x.chunk`, `x.select`, `torch.random`,
# `tl.math`). Python >= 3.10 lists them (sys.stdlib_module_names).
STDLIB_ATTRS = frozenset(sys.stdlib_module_names) - {"chunk", "select", "math", "random"}
# The same for the modules of torch and Triton themselves: every name under which one is a public attribute of
# torch, triton or triton.language or of their modules two levels down, or a module of their folders three levels
# down (torch 2.13, triton 3.9: service/grading/module_names.py; the unit test test_module_attrs_cover_torch_and_triton
# reads the installed packages and fails on a name missing there). Rule 1
# listed routes by what they do, and `torch.autograd.profiler_util.attrgetter('__traceback__.tb_frame.f_locals')`
# passed every one (red team 10: 3/3 code points for torch's answer, x read from the frame): a module reached as an
# attribute is a door to whatever it imported, so host code may reach only the namespaces an honest combine uses,
# allow-list style: torch.<function>, torch.cuda, torch.linalg, torch.special, torch.fft, torch.nn.functional,
# torch.testing, triton.language, tl.math, torch.random (MODULE_NAMESPACES). A name that is also a tensor's method
# or a torch function (x.cpu(), torch.flatten(…), t.data) is not listed: reaching a module needs a listed name first.
MODULE_ATTRS = MODULE_NAMES - STDLIB_ATTRS

# In-place methods that overwrite their receiver whatever it held (rule 3).
OVERWRITING_METHODS = frozenset({"zero_", "fill_", "copy_", "normal_", "uniform_", "random_", "bernoulli_",
                                 "exponential_", "geometric_", "cauchy_", "log_normal_"})
# Work the dependence analysis may do on one fill set: a bound on loops within loops (each runs until
# nothing changes) and on calls; past it, the fills are refused as too complex to check (`too_complex`): a rule that
# gives up must not let the code run unchecked. The catalogue's fills take a few hundred steps.
STEP_BUDGET = 20_000
# Steps of one `t.to(x)` receiver's check (rule 2): names followed through their host bindings; past it, not a
# tensor (refused). It recurses along a chain of names, which the syntax tree's depth does not bound: a budget far
# below Python's recursion limit (a 700-name chain raised RecursionError, which check() once took for "nothing
# found"; it now refuses, `too_complex`).
TENSOR_STEPS = 64
CALL_DEPTH = 4


def _harmless_builtin(call: ast.Call) -> bool:
    """A call of HARMLESS_BUILTINS that hands its arguments to nothing the fill can read back: `print` only to
    the standard output (`print(x, file=buf)` writes x's values as text into an object the fill then reads,
    and a `**` expansion may say file=)."""
    func = call.func
    if not isinstance(func, ast.Name) or func.id not in HARMLESS_BUILTINS:
        return False
    return func.id != "print" or all(k.arg in ("sep", "end", "flush") for k in call.keywords)


def _is_hook(attr: str) -> bool:
    """A registration API: a function handed to torch (or Triton) that it calls later with the tensors it
    sees (`register_forward_hook`, `Tensor.register_hook`, `saved_tensors_hooks`, `launch_enter_hook`)."""
    return attr.startswith("register") or attr.endswith(("_hook", "_hooks"))


@dataclasses.dataclass(frozen=True)
class Finding:
    """Why host fills may not run: the rule, the blank (1-based) and the statement it concerns."""

    rule: str  # one of RULES
    blank: int
    line: int  # in the submission (a fill node keeps the student's line); 0 where only template code is quoted
    code: str  # the statement, canonical (ast.unparse), at most one line of 160 characters
    what: str  # rule 1: the construct; rule 2: the name that holds an input; rule 3: the returned value
    inputs: tuple[str, ...] = ()  # the exercise's declared inputs
    buffers: tuple[str, ...] = ()  # rule 3: what the cell's launches write

    @property
    def diagnosis_id(self) -> str:
        return f"host_{self.rule}"

    def message(self, language: str) -> str:
        which = (render("host_fills.blank_at", language, blank=self.blank, line=self.line) if self.blank and self.line
                 else render("host_fills.blank", language, blank=self.blank) if self.blank
                 else render("host_fills.host_code", language))
        return render(f"host_fills.{self.rule}", language, which=which, code=self.code, what=self.what,
                      inputs=", ".join(self.inputs), buffers=", ".join(self.buffers) or "—",
                      steps=f"{STEP_BUDGET:,}", depth=MAX_FILL_NESTING)

    def diagnosis(self, language: str) -> Diagnosis:
        messages = {lang: self.message(lang) for lang in ("zh", "en")}
        return Diagnosis(id=self.diagnosis_id, message=messages.get(language, messages["en"]),
                         evidence={"rule": self.rule, "blank": self.blank, "line": self.line, "code": self.code,
                                   "what": self.what, "inputs": list(self.inputs), "buffers": list(self.buffers),
                                   "messages": messages})


def check(exercise: Exercise, extraction: Extraction) -> Finding | None:
    """The first finding on the host fills of `extraction`, or None (none, or the exercise declares
    no `host_code`). Only for an extraction that found every blank."""
    declared = exercise.spec.host_code
    if declared is None or extraction.error is not None or any(f is None for f in extraction.fills):
        return None
    hosts = host_blanks(exercise.template)
    if not any(hosts):
        return None
    inputs = tuple(sorted(declared.inputs))
    try:
        cell = _Cell(exercise.template, extraction.fills, hosts, frozenset(declared.inputs), exercise.spec.entry_point)
        return (cell.introspection() or cell.launch_changes() or cell.input_reads()
                or cell.returns_not_from_kernel())
    except (RecursionError, _OverBudget):
        # Fail closed: a rule that could not follow the code to its end found nothing only because it stopped.
        # (RecursionError was taken for "no finding": a finding quoting a statement that held 160 dicts within dicts
        # exhausted the recursion limit in ast.unparse, and every host rule was skipped: red team 10, 3/3 code points
        # for torch's answer.) extract.MAX_FILL_NESTING keeps honest code far from the limit.
        return Finding(rule="too_complex", blank=0, line=0, code="", what="recursion", inputs=inputs)


# --- the cell: template and fills in one tree ------------------------------------------------------

Fill: TypeAlias = ast.expr | list[ast.stmt]


class _Substitute(ast.NodeTransformer):
    """The template's tree with each blank replaced by its fill's nodes (the student's, line numbers kept)."""

    def __init__(self, fills: dict[tuple[int, int], Fill]) -> None:
        self.fills = fills

    def visit_Expr(self, node: ast.Expr) -> ast.AST | list[ast.stmt]:
        if isinstance(node.value, ast.Name) and node.value.id == BLANK:
            fill = self.fills[(node.value.lineno, node.value.col_offset)]
            if isinstance(fill, list):
                return fill
            return ast.Expr(value=fill, lineno=node.lineno, col_offset=node.col_offset)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == BLANK:
            fill = self.fills[(node.lineno, node.col_offset)]
            assert not isinstance(fill, list)  # a block blank is a statement of its own (visit_Expr)
            return fill
        return node


class _Cell:
    def __init__(self, template: str, fills: Sequence[Fill | None], hosts: tuple[bool, ...],
                 inputs: frozenset[str], entry_point: str) -> None:
        tree = syntax.parse(template)
        spots = sorted((n.lineno, n.col_offset) for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == BLANK)
        present = [f for f in fills if f is not None]
        self.module = _Substitute(dict(zip(spots, present))).visit(tree)
        ast.fix_missing_locations(self.module)
        self.inputs = inputs
        self.entry_point = entry_point
        # every node of a host fill -> its blank's number (1-based); kernel fills are not host code
        self.blank_of: dict[int, int] = {}
        for number, (fill, host) in enumerate(zip(present, hosts), start=1):
            if host:
                for root in fill if isinstance(fill, list) else [fill]:
                    for node in ast.walk(root):
                        self.blank_of[id(node)] = number
        self.parent: dict[int, ast.AST] = {}
        for node in ast.walk(self.module):
            for child in ast.iter_child_nodes(node):
                self.parent[id(child)] = node
        # the statements that hold a host fill's code (a whole fill statement, or `var = <fill>`)
        self.fill_statements = {id(self._statement(n)) for n in self._host_nodes()}
        self.kernels = frozenset(f.name for f in self.module.body
                                 if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_jit(f))
        self.functions = {f.name: f for f in self.module.body
                          if isinstance(f, ast.FunctionDef) and f.name not in self.kernels}
        self.written = {f.name: _written_parameters(f) for f in self.module.body
                        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in self.kernels}
        # the names the template binds at module level to code: its kernels, host functions and modules
        self.modules = frozenset((a.asname or a.name).split(".")[0] for f in self.module.body
                                 if isinstance(f, (ast.Import, ast.ImportFrom)) for a in f.names)
        self.module_names = self.modules | frozenset(
            f.name for f in self.module.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
        self._bindings: dict[str, list[ast.AST | None]] | None = None  # _host_bindings, made once
        self._steps_left = 0  # _tensor_receiver's budget
        self._taint_cache: dict[int, set[str]] = {}
        self._grid_index: dict[int, dict[str, list[ast.AST]]] = {}  # _grids: a scope's definitions by name
        # the template's own launches (kernel[grid](...) outside every fill), by the function that holds them
        self.template_launches: dict[int, list[ast.Call]] = {}
        for node in ast.walk(self.module):
            if isinstance(node, ast.Call) and self._is_launch(node) and id(node) not in self.blank_of:
                self.template_launches.setdefault(id(self._scope(node)), []).append(node)

    # -- reporting --

    def _statement(self, node: ast.AST) -> ast.AST:
        while not isinstance(node, ast.stmt) and id(node) in self.parent:
            node = self.parent[id(node)]
        return node

    def _finding(self, rule: str, node: ast.AST, what: str, buffers: tuple[str, ...] = ()) -> Finding:
        statement = self._statement(node)
        text = ast.unparse(statement).splitlines()[0] if isinstance(statement, ast.stmt) else ast.unparse(node)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and statement.decorator_list:
            text = next(line for line in ast.unparse(statement).splitlines() if not line.startswith("@"))
        if isinstance(statement, (ast.If, ast.For, ast.While, ast.With)) and statement is not node:
            text = ast.unparse(node)  # the compound statement's header would hide the part that matters
        # the blank and the student's line: the node's own if it is a fill's, else the first fill node under it
        # (a template statement's line is the template's, not the submission's: then none is said)
        spot = node if id(node) in self.blank_of else next(
            (n for n in ast.walk(statement) if id(n) in self.blank_of and hasattr(n, "lineno")), None)
        blank = self.blank_of[id(spot)] if spot is not None else 0
        line = getattr(spot, "lineno", 0) if spot is not None else 0
        return Finding(rule=rule, blank=blank, line=line, code=_clip(text), what=_clip(what, 60),
                       inputs=tuple(sorted(self.inputs)), buffers=buffers)

    def _host_nodes(self) -> Iterator[ast.AST]:
        for node in ast.walk(self.module):
            if id(node) in self.blank_of:
                yield node

    # -- rule 1 --

    def introspection(self) -> Finding | None:
        for node in self._host_nodes():
            what: str | None = None
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                what = "import"
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                what = "global" if isinstance(node, ast.Global) else "nonlocal"
            elif isinstance(node, ast.ClassDef):  # a torch function mode, __del__, __eq__: code run by others
                what = "class"
            elif isinstance(node, ast.Match):
                # a class pattern reads the attributes it names as identifiers no Attribute node holds:
                # `case object(__traceback__=object(tb_frame=object(f_locals=loc)))` is the caller's frame (red
                # team 10: 3/3 code points), and a capture pattern binds any name, an input's too (`case x:`)
                what = "match"
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("__"):
                what = node.name
            elif isinstance(node, ast.Name) and (node.id in INTROSPECTION_NAMES or node.id.startswith("__")):
                what = node.id
            elif _binds(node) & HARMLESS_BUILTINS:
                # len = lambda t: t.var(1): rule 2 trusts these names with an input (red team 9: 2/2 regular points)
                what = f"{sorted(_binds(node) & HARMLESS_BUILTINS)[0]} = …"
            elif isinstance(node, ast.Name) and node.id == "type":
                # type(name, bases, namespace) is a class statement by another name (a torch function mode that
                # torch.empty_like(x) hands x), and type(obj) is the class whose methods every instance shares
                # (type(kernel).run: the launch itself)
                what = "type"
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del)):
                # monkeypatching: a module's function or a class's method replaced (the launch, a torch method the
                # template calls with the input) runs the fill's code where the template calls the original
                what = f"{_clip(ast.unparse(node), 40)} = …"
            elif isinstance(node, ast.Attribute) and (node.attr.startswith("_") or node.attr in INTROSPECTION_ATTRS
                                                       or node.attr in STDLIB_ATTRS or node.attr in MODULE_ATTRS
                                                       or _is_hook(node.attr)):
                what = "." + node.attr
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.kernels:
                what = ast.unparse(node)  # kernel.src, kernel.fn: its source tells one run from another
            if what is not None:
                return self._finding("introspects", node, what)
        return None

    # -- rule 1b: the template's launch is the template's --

    def launch_changes(self) -> Finding | None:
        """A host fill names a kernel of the cell only to launch it (`kernel[grid](...)`), binds none of the
        template's module-level names (kernels, host functions, modules) nor the names its launches read
        other than the inputs and the buffers they write (`M`, `N`, `block`, `grid`), and where the template
        launches a kernel itself, launches it only with the template's arguments, in the same function.
        Otherwise the launch the rules trust by its name is not the lesson's: a dict or a function under the
        kernel's name handed x by the template's launch (torch on the host), a kernel of the fill's own under
        that name, or the cell's kernel launched as a copy engine (`kernel[(M * N, 1)](x, copy, tmp, 1, 1)`)
        whose output is x again."""
        protected = self.module_names | self._launch_names()
        buffers = self._launch_buffers()
        for node in self._host_nodes():
            if self.template_launches and isinstance(node, ast.Name) and node.id in self.inputs \
                    and isinstance(node.ctx, (ast.Store, ast.Del)) and not self._same_input_again(node) \
                    and not isinstance(self.parent.get(id(node)), ast.AugAssign):  # x += …: rule 2 says it reads x
                # x = x.as_strided((L, N), (1, 1)): the template's launch (x.stride(0)) then sums windows of x
                # that start at every element, from which the host solves for each element
                return self._finding("changes_launch", node, f"{node.id} = …")
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in buffers:
                # sumsqs = x.view(-1): the template then hands the input to the combine as the kernel's output
                statement = self.parent.get(id(node))
                value = getattr(statement, "value", None)
                scope = self._scope(node)
                if isinstance(value, ast.AST) and self._carries(value, self._scope_taint(scope)):
                    return self._finding("changes_launch", node, f"{node.id} = {_clip(ast.unparse(value), 40)}")
            bound = _binds(node) & protected
            if bound:
                name = sorted(bound)[0]
                return self._finding("changes_launch", node, f"{name} = …" if name not in self.kernels
                                     else f"{name} (kernel)")
            if isinstance(node, ast.Name) and node.id in self.kernels and not self._launched_by(node):
                return self._finding("changes_launch", node, node.id)
            if isinstance(node, ast.Call) and self._is_launch(node) and not self._as_the_template_launches(node):
                assert isinstance(node.func, ast.Subscript)
                return self._finding("changes_launch", node, ast.unparse(node.func.value) + "[…]("
                                     + ast.unparse(node).split("](", 1)[-1])
        return None

    def _same_input_again(self, target: ast.Name) -> bool:
        """`x = x.contiguous()`: an input bound again to a conversion of itself that keeps its shape, by a plain
        assignment (a view that changes its shape or strides would change what the template's launch reads)."""
        statement = self.parent.get(id(target))
        if not (isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None):
            return False
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if targets != [target]:
            return False
        value: ast.AST = statement.value
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr in SAME_SHAPE_CONVERSIONS:
            value = value.func.value
        return isinstance(value, ast.Name) and value.id == target.id and value is not statement.value

    def _launched_by(self, name: ast.Name) -> bool:
        above = self.parent.get(id(name))
        call = self.parent.get(id(above)) if above is not None else None
        return (isinstance(name.ctx, ast.Load) and isinstance(above, ast.Subscript) and above.value is name
                and isinstance(call, ast.Call) and call.func is above)

    def _launch_names(self) -> frozenset[str]:
        """The names the template's launches read (arguments, grid) and, through the template's own
        assignments in the same function, what those are made of; less the inputs and what the launches write."""
        names: set[str] = set()
        for launches in self.template_launches.values():
            for call in launches:
                scope = self._scope(call)
                reads = {n.id for n in ast.walk(call) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                assignments: list[tuple[set[str], ast.expr]] = []
                for n in ast.walk(scope):
                    if isinstance(n, (ast.Assign, ast.AnnAssign)) and id(n) not in self.blank_of \
                            and n.value is not None:
                        targets: list[ast.expr] = list(n.targets) if isinstance(n, ast.Assign) else [n.target]
                        bound = {t.id for root in targets for t in ast.walk(root) if isinstance(t, ast.Name)}
                        assignments.append((bound, n.value))
                changed = True
                while changed:
                    changed = False
                    for bound, value in assignments:
                        if bound & reads:
                            more = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)} - reads
                            if more:
                                reads |= more
                                changed = True
                written = self.launch_writes(call)
                buffers = {_root_name(a) for a in (written if written is not None else [*call.args])}
                names |= reads - set(self.inputs) - {b for b in buffers if b is not None} - self.kernels
        return frozenset(names)

    def _launch_buffers(self) -> frozenset[str]:
        """The names of the buffers the template's launches write (sums, sumsqs)."""
        names: set[str] = set()
        for launches in self.template_launches.values():
            for call in launches:
                written = self.launch_writes(call)
                names |= {n for n in (_root_name(a) for a in (written if written is not None else [])) if n is not None}
        return frozenset(names)

    def _as_the_template_launches(self, call: ast.Call) -> bool:
        """A launch in a host fill: where the template launches none of the cell's kernels, any (a wrapper
        that is a blank); else only in a function where the template launches the same kernel, with the
        same arguments (the grid may differ)."""
        if not self.template_launches:
            return True
        assert isinstance(call.func, ast.Subscript) and isinstance(call.func.value, ast.Name)
        kernel = call.func.value.id

        def arguments(c: ast.Call) -> str:
            keywords = sorted(c.keywords, key=lambda k: k.arg or "")
            return ast.dump(ast.Tuple(elts=list(c.args), ctx=ast.Load())) + "|" + "|".join(
                f"{k.arg}={ast.dump(k.value)}" for k in keywords)

        own = [c for c in self.template_launches.get(id(self._scope(call)), [])
               if isinstance(c.func, ast.Subscript) and isinstance(c.func.value, ast.Name)
               and c.func.value.id == kernel]
        return any(arguments(c) == arguments(call) for c in own)

    # -- rule 2 --

    def _scope(self, node: ast.AST) -> ast.AST:
        while id(node) in self.parent:
            node = self.parent[id(node)]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(node) not in self.blank_of:
                return node
        return self.module

    def _carries(self, node: ast.AST, tainted: set[str]) -> bool:
        """`node`'s value is an input's (a name of one, a view or conversion of one)."""
        if isinstance(node, ast.Name):
            return node.id in tainted and isinstance(node.ctx, ast.Load)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VIEW_METHODS:
            return self._carries(node.func.value, tainted)
        if isinstance(node, ast.Attribute) and node.attr in VIEW_ATTRS:
            return self._carries(node.value, tainted)
        if isinstance(node, ast.Subscript):
            return self._carries(node.value, tainted)
        if isinstance(node, ast.IfExp):
            return self._carries(node.body, tainted) or self._carries(node.orelse, tainted)
        if isinstance(node, ast.BoolOp):
            return any(self._carries(v, tainted) for v in node.values)
        if isinstance(node, ast.NamedExpr):
            return self._carries(node.value, tainted)
        return False

    def _scope_taint(self, scope: ast.AST) -> set[str]:
        """`_tainted(scope)`, made once per scope (a setdefault(…, self._tainted(scope)) made it again for every
        name of a fill: 800 assignments and as many reads cost the worker 86 s before any sandbox, red team 9)."""
        if id(scope) not in self._taint_cache:  # (the same for every rule: the syntax and the inputs decide it)
            self._taint_cache[id(scope)] = self._tainted(scope)
        return self._taint_cache[id(scope)]

    def _tainted(self, scope: ast.AST) -> set[str]:
        """The names that hold an input somewhere in `scope` (flow-insensitive: a name that ever holds
        one holds it everywhere), from the declared inputs through every assignment, the template's too."""
        tainted = set(self.inputs)
        pairs: list[tuple[ast.AST, ast.AST]] = []
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign):
                pairs += [(t, node.value) for t in node.targets]
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
                pairs.append((node.target, node.value))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                pairs.append((node.target, node.iter))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                pairs.append((node.optional_vars, node.context_expr))
        # a worklist: a pair is looked at again only when a name its value reads has just become an input's
        # (linear in the pairs' names; a pass over every pair until nothing changed was quadratic in a chain)
        readers: dict[str, list[int]] = {}
        for index, (_, value) in enumerate(pairs):
            for name in {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}:
                readers.setdefault(name, []).append(index)
        pending = sorted({i for name in tainted for i in readers.get(name, [])})
        while pending:
            target, value = pairs[pending.pop()]
            for name in _bound(target, value, lambda v: self._carries(v, tainted)):
                if name not in tainted:
                    tainted.add(name)
                    pending += readers.get(name, [])
        return tainted

    def _shadowed(self) -> set[int]:
        """Names inside a function, lambda or comprehension of a fill that rebind an input's name there."""
        shadowed: set[int] = set()
        for node in self._host_nodes():
            bound: set[str] = set()
            if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                bound = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
                bound |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
                body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                bound = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
                body = [node]
            else:
                continue
            for root in body:
                for inner in ast.walk(root):
                    if isinstance(inner, ast.Name) and inner.id in bound:
                        shadowed.add(id(inner))
        return shadowed

    def input_reads(self) -> Finding | None:
        shadowed = self._shadowed()
        for node in self._host_nodes():
            if not isinstance(node, ast.Name) or id(node) in shadowed:
                continue
            scope = self._scope(node)
            tainted = self._scope_taint(scope)
            if isinstance(node.ctx, ast.Store):
                parent = self.parent.get(id(node))
                if isinstance(parent, ast.AugAssign) and node.id in tainted:  # x += ...: reads x too
                    return self._finding("reads_input", parent, node.id)
                continue
            if node.id in tainted and not self._allowed(node, tainted):
                return self._finding("reads_input", node, self._named(node.id))
        return self._grid_reads()

    def _named(self, name: str) -> str:
        return name if name in self.inputs else f"{name} (= {', '.join(sorted(self.inputs))})"

    def _grid_reads(self) -> Finding | None:
        """A callable grid gets the launch's arguments (Triton calls `grid(bound_args)`): `meta['x']` is
        the input under another name. Where a launch passes an input, a host fill's grid may read only
        `meta['NAME']` of the kernel's other parameters (`meta['BLOCK']`), and must be a tuple, a lambda
        or a function of the cell (anything else cannot be followed)."""
        for call in ast.walk(self.module):
            if not (isinstance(call, ast.Call) and self._is_launch(call)):
                continue
            scope = self._scope(call)
            tainted = self._scope_taint(scope)
            carried = self._carried_parameters(call, tainted)
            if not carried:
                continue
            assert isinstance(call.func, ast.Subscript)
            for grid in self._grids(call.func.slice, scope):
                if isinstance(grid, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
                    read = self._meta_read(grid, carried)
                    if read is not None:
                        return self._finding("reads_input", read, f"{read.id} (= {', '.join(sorted(carried))})")
                elif id(grid) in self.blank_of and not isinstance(grid, (ast.Tuple, ast.List)):
                    named = f"{', '.join(sorted(carried))} ({ast.unparse(grid)})"
                    return self._finding("reads_input", grid, named)
        return None

    def _meta_read(self, grid: ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef,
                   carried: set[str]) -> ast.Name | None:
        """A use, in a host fill, of a grid callable's parameter other than `meta['NAME']` of a parameter
        that no input is handed to."""
        args = grid.args
        params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
                  if a is not None}
        body: list[ast.AST] = [grid.body] if isinstance(grid, ast.Lambda) else list(grid.body)
        for inner in (n for root in body for n in ast.walk(root)):
            if not (isinstance(inner, ast.Name) and inner.id in params and id(inner) in self.blank_of):
                continue
            above = self.parent.get(id(inner))
            key = above.slice if isinstance(above, ast.Subscript) and above.value is inner else None
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or key.value in carried:
                return inner
        return None

    def _carried_parameters(self, call: ast.Call, tainted: set[str]) -> set[str]:
        """The kernel's parameters that this launch hands an input (by name, as a grid callable sees them)."""
        assert isinstance(call.func, ast.Subscript) and isinstance(call.func.value, ast.Name)
        kernel = self._kernel(call.func.value.id)
        params = [a.arg for a in [*kernel.args.posonlyargs, *kernel.args.args]]
        carried = {p for p, a in zip(params, call.args) if self._carries(a, tainted)}
        carried |= {k.arg for k in call.keywords if k.arg is not None and self._carries(k.value, tainted)}
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            carried |= set(params)
        return carried

    def _grids(self, grid: ast.expr, scope: ast.AST) -> list[ast.AST]:
        """What a launch's grid may be: the expression, or each value its name is bound to in the scope."""
        if not isinstance(grid, ast.Name):
            return [grid]
        if id(scope) not in self._grid_index:  # one walk per scope, not one per launch (700 launches: 7 s)
            index: dict[str, list[ast.AST]] = {}
            for node in ast.walk(scope):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    index.setdefault(node.name, []).append(node)
                elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for name in {t.id for t in targets if isinstance(t, ast.Name)}:
                        index.setdefault(name, []).append(node.value)
            self._grid_index[id(scope)] = index
        return list(self._grid_index[id(scope)].get(grid.id, []))

    def _allowed(self, node: ast.AST, tainted: set[str]) -> bool:
        """Whether an input's value at `node` goes only where host code may take it (rule 2)."""
        parent = self.parent.get(id(node))
        if isinstance(parent, ast.keyword):  # a keyword argument: its call decides
            node, parent = parent, self.parent.get(id(parent))
        if isinstance(parent, ast.Attribute) and parent.value is node:
            above = self.parent.get(id(parent))
            called = isinstance(above, ast.Call) and above.func is parent
            if not called and parent.attr in METADATA_ATTRS:
                return True
            if called and parent.attr in METADATA_METHODS | NEW_METHODS:
                return True
            if called and parent.attr in VIEW_METHODS:
                assert above is not None
                return self._allowed(above, tainted)
            if not called and parent.attr in VIEW_ATTRS:
                return self._allowed(parent, tainted)
            return False
        if isinstance(parent, ast.Call) and parent.func is not node:
            arguments = [*parent.args, *parent.keywords]
            func = parent.func
            if self._is_launch(parent):
                return True
            if isinstance(func, ast.Attribute) and func.attr in LIKE_FUNCTIONS and arguments and arguments[0] is node:
                return True
            if isinstance(func, ast.Attribute) and func.attr in SHAPE_ARGUMENT_METHODS:
                # t.to(x) lends t x's dtype and device; on a class or an operator (torch.Tensor.to(x, torch.float64),
                # torch.ops.aten.to(x)) the same call is x itself, converted: only a receiver known to be a tensor
                return self._tensor_receiver(func.value)
            return _harmless_builtin(parent)
        if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and parent.value is node:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            return all(_names_only(t) for t in targets)
        if isinstance(parent, (ast.Tuple, ast.List)):
            above = self.parent.get(id(parent))
            if isinstance(above, ast.Assign) and above.value is parent:  # a, b = x, y: each to its own name
                return all(isinstance(t, (ast.Tuple, ast.List)) and len(t.elts) == len(parent.elts)
                           and _names_only(t) for t in above.targets)
            return False
        if isinstance(parent, ast.IfExp) and parent.test is not node or isinstance(parent, ast.BoolOp):
            return self._allowed(parent, tainted)
        if isinstance(parent, ast.Compare):
            return all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops)
        return isinstance(parent, ast.Expr)  # a bare `x` computes nothing

    def _tensor_receiver(self, node: ast.AST) -> bool:
        """`_tensor_value` of a call's receiver, within a budget of steps (past it: not known to be a tensor)."""
        self._steps_left = TENSOR_STEPS
        try:
            return self._tensor_value(node, set())
        except (_OverBudget, RecursionError):
            return False

    def _tensor_value(self, node: ast.AST, seen: set[str]) -> bool:
        """`node` is a tensor, not a class or a function whose method would take an input as its first
        argument: a name the template binds (a parameter, `y = torch.empty_like(x)`) that no host fill binds
        to anything but such a value; a call of a module's function (`torch.zeros(M)`) or of a tensor's method;
        an element or arithmetic of a tensor."""
        self._steps_left -= 1
        if self._steps_left < 0:
            raise _OverBudget
        if isinstance(node, ast.Name):
            if node.id in self.module_names:
                return False
            if node.id in seen:  # `y = y.float()`: what y was before decides
                return True
            seen.add(node.id)
            return all(value is not None and self._tensor_value(value, seen) for value in self._host_bindings(node.id))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in self.modules:
                return True
            return self._tensor_value(owner, seen)
        if isinstance(node, ast.Subscript):
            return self._tensor_value(node.value, seen)
        if isinstance(node, ast.BinOp):
            return self._tensor_value(node.left, seen)
        return False

    def _host_bindings(self, name: str) -> list[ast.AST | None]:
        """What host fills bind `name` to: the value of each `name = value` (plain assignments), None for any
        other binding (a parameter, a loop or `with` target, a def)."""
        if self._bindings is None:
            values: dict[str, list[ast.AST | None]] = {}
            counts: dict[str, int] = {}
            for node in self._host_nodes():
                if isinstance(node, ast.Assign):
                    for t in node.targets:
                        if isinstance(t, ast.Name):
                            values.setdefault(t.id, []).append(node.value)
                elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name):
                    values.setdefault(node.target.id, []).append(node.value)
                for bound in _binds(node):
                    counts[bound] = counts.get(bound, 0) + 1
            self._bindings = {n: values.get(n, []) + [None] * (c - len(values.get(n, []))) for n, c in counts.items()}
        return self._bindings.get(name, [])

    def _is_launch(self, call: ast.Call) -> bool:
        """`kernel[grid](...)` with `kernel` one of the cell's module-level @triton.jit functions."""
        func = call.func
        return isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name) and func.value.id in self.kernels

    def _kernel(self, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
        return next(f for f in self.module.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and f.name == name)

    def launch_writes(self, call: ast.Call) -> list[ast.expr] | None:
        """The arguments of a launch that the kernel stores into (`_written_parameters`), or None if
        its parameters cannot be matched (then every argument may be)."""
        assert isinstance(call.func, ast.Subscript) and isinstance(call.func.value, ast.Name)
        kernel = self._kernel(call.func.value.id)
        params = [a.arg for a in [*kernel.args.posonlyargs, *kernel.args.args]]
        written = self.written.get(kernel.name, frozenset())
        if not written or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        by_name = dict(zip(params, call.args)) | {k.arg: k.value for k in call.keywords if k.arg is not None}
        return [by_name[p] for p in params if p in written and p in by_name]

    # -- rule 3 --

    def returns_not_from_kernel(self) -> Finding | None:
        entry = self.functions.get(self.entry_point)
        if entry is None or not any(id(n) in self.blank_of for n in ast.walk(self.module)):
            return None
        flow = _Flow(self)
        try:
            returns = flow.run(entry, {})
        except _OverBudget:  # refused (check): past the budget nothing says the result comes from the kernel
            return Finding(rule="too_complex", blank=0, line=0, code="", what="steps",
                           inputs=tuple(sorted(self.inputs)))
        buffers = tuple(sorted(flow.buffers))
        for returned in returns:
            parts = returned.value if isinstance(returned.value, tuple) else (returned.value,)
            for index, part in enumerate(parts):
                if not _flat(part):
                    node, what = self._culprit(flow, returned, index, len(parts))
                    return self._finding("not_from_kernel", node, what, buffers)
        return None

    def _culprit(self, flow: _Flow, returned: _Returned, index: int, count: int) -> tuple[ast.AST, str]:
        """The statement to quote for element `index` of a return that does not come from a kernel: the
        host fill that overwrote what a launch wrote, else the return itself where it is a fill's, else the
        fill that last gave the returned name its value; in this function or the combine it calls."""
        statement = returned.statement
        value = statement.value
        if isinstance(value, ast.Tuple) and len(value.elts) == count:
            value = value.elts[index]
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in flow.seen_returns:
            for inner in flow.seen_returns[value.func.id]:
                parts = inner.value if isinstance(inner.value, tuple) else (inner.value,)
                if len(parts) == count and not _flat(parts[index]):
                    return self._culprit(flow, inner, index, count)
        in_fill = id(statement) in self.fill_statements
        if isinstance(value, ast.Name):
            if value.id in returned.overwritten:
                return returned.overwritten[value.id], value.id
            if not in_fill and value.id in returned.assigned:
                return returned.assigned[value.id], value.id
        what = ast.unparse(value) if value is not None else "None"
        return (statement if in_fill or value is None else value), what


def _names_only(target: ast.AST) -> bool:
    if isinstance(target, ast.Name):
        return True
    return isinstance(target, (ast.Tuple, ast.List)) and all(_names_only(e) for e in target.elts)


def _bound(target: ast.AST, value: ast.AST, carries: Callable[[ast.AST], bool]) -> list[str]:
    """The names `target = value` binds to a value that `carries`, element by element where both are tuples."""
    if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
            and len(target.elts) == len(value.elts):
        return [name for t, v in zip(target.elts, value.elts) for name in _bound(t, v, carries)]
    if carries(value):
        return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
    return []


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- rule 3: does a value depend on what a kernel launch wrote? -----------------------------------

Val: TypeAlias = bool | tuple["Val", ...]


# The most a tuple value may hold: elements, and tuples within it. Values were unbounded: `a1 = (a0, a0)`,
# `a2 = (a1, a1)`, … shares one object per level, and _flat or _join walk it as a tree, 2**k leaves: 22 such lines
# cost the worker 13 s of CPU before any sandbox, 40 would have held it for days (red team 10). Past the bound the
# tuple is one value, any of its elements' (lenient, as everywhere in rule 3: "depends" where it cannot tell).
# `return mean, var` is one level of two.
VAL_WIDTH = 16
VAL_DEPTH = 2


def _val_depth(value: Val) -> int:
    """The depth of a value made by _bounded (at most VAL_DEPTH, so this reads at most VAL_WIDTH ** VAL_DEPTH)."""
    return 1 + max((_val_depth(v) for v in value), default=0) if isinstance(value, tuple) else 0


def _bounded(value: tuple[Val, ...]) -> Val:
    """`value`, or its _flat where it is wider than VAL_WIDTH or deeper than VAL_DEPTH (its elements are bounded)."""
    if len(value) > VAL_WIDTH or _val_depth(value) > VAL_DEPTH:
        return _flat(value)
    return value


def _flat(value: Val) -> bool:
    return any(_flat(v) for v in value) if isinstance(value, tuple) else value


def _join(a: Val, b: Val) -> Val:
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(_join(x, y) for x, y in zip(a, b))
    return _flat(a) or _flat(b)


def _join_env(a: dict[str, Val], b: dict[str, Val]) -> dict[str, Val]:
    return {k: _join(a.get(k, False), b.get(k, False)) for k in a.keys() | b.keys()}


@dataclasses.dataclass(frozen=True)
class _Returned:
    """A return the abstract run reached: its value, and which host fill statements had last assigned
    (`assigned`) or overwritten what a launch wrote into (`overwritten`) each name by then."""

    statement: ast.Return
    value: Val
    holding: frozenset[str]  # the names whose values depend on a launch's output there
    assigned: dict[str, ast.AST]
    overwritten: dict[str, ast.AST]



class _OverBudget(Exception):
    pass


class _Flow:
    """An abstract run of the host functions: each value is True where it depends on a buffer a
    launch of the cell's kernels wrote (over-approximated: any operand that does, any branch that
    may), tuples element by element. Lenient by design: where it cannot tell, it says True."""

    def __init__(self, cell: _Cell) -> None:
        self.cell = cell
        self.steps = 0
        self.depth = 0
        self.buffers: set[str] = set()
        self.seen_returns: dict[str, list[_Returned]] = {}
        self.assigned: dict[str, ast.AST] = {}  # name -> the host fill statement that last assigned it
        self.overwritten: dict[str, ast.AST] = {}  # name -> the host fill statement that replaced a launch's output
        self.current: ast.stmt | None = None  # the statement the run is in
        self.holding_at_end: dict[str, frozenset[str]] = {}  # function -> names holding a launch's output at its end

    def run(self, function: ast.FunctionDef, env: dict[str, Val]) -> list[_Returned]:
        returns: list[_Returned] = []
        end = self._block(function.body, dict(env), returns)
        self.seen_returns[function.name] = returns
        self.holding_at_end[function.name] = frozenset(k for k, v in end.items() if _flat(v))
        return returns

    def _tick(self) -> None:
        self.steps += 1
        if self.steps > STEP_BUDGET:
            raise _OverBudget

    # statements

    def _block(self, body: list[ast.stmt], env: dict[str, Val], returns: list[_Returned]) -> dict[str, Val]:
        for statement in body:
            env = self._statement(statement, env, returns)
        return env

    def _statement(self, node: ast.stmt, env: dict[str, Val], returns: list[_Returned]) -> dict[str, Val]:
        self._tick()
        self.current = node
        if isinstance(node, ast.Assign):
            value = self._eval(node.value, env)
            for target in node.targets:
                self._assign(target, value, env, node)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self._assign(node.target, self._eval(node.value, env), env, node)
        elif isinstance(node, ast.AugAssign):
            value = self._eval(node.value, env)
            self._assign(node.target, _flat(value) or _flat(self._eval_target(node.target, env)), env, node)
        elif isinstance(node, ast.Return):
            value = self._eval(node.value, env) if node.value is not None else False
            holding = frozenset(k for k, v in env.items() if _flat(v))
            returns.append(_Returned(node, value, holding, dict(self.assigned), dict(self.overwritten)))
        elif isinstance(node, ast.If):
            self._eval(node.test, env)
            env = _join_env(self._block(node.body, dict(env), returns), self._block(node.orelse, dict(env), returns))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            if isinstance(node, ast.While):
                self._eval(node.test, env)
            while True:
                inner = dict(env)
                if not isinstance(node, ast.While):
                    self._assign(node.target, _flat(self._eval(node.iter, inner)), inner, node)
                joined = _join_env(env, self._block(node.body, inner, returns))
                if joined == env:
                    break
                env = joined
            env = self._block(node.orelse, env, returns)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                value = self._eval(item.context_expr, env)
                if item.optional_vars is not None:
                    self._assign(item.optional_vars, value, env, node)
            env = self._block(node.body, env, returns)
        elif isinstance(node, ast.Try):
            env = self._block(node.body, env, returns)
            for handler in node.handlers:
                env = _join_env(env, self._block(handler.body, dict(env), returns))
            env = self._block(node.orelse, env, returns)
            env = self._block(node.finalbody, env, returns)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            env[node.name] = False
        else:  # Expr, Assert, Raise, Delete, Pass, Match, ...: their expressions, for launches and in-place writes
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self._eval(child, env)
                elif isinstance(child, ast.stmt):
                    env = self._statement(child, env, returns)
        return env

    def _assign(self, target: ast.AST, value: Val, env: dict[str, Val], statement: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self._set(target.id, value, env, statement)
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = value if isinstance(value, tuple) and len(value) == len(target.elts) else None
            for i, element in enumerate(target.elts):
                self._assign(element, parts[i] if parts is not None else _flat(value), env, statement)
        elif isinstance(target, ast.Starred):
            self._assign(target.value, _flat(value), env, statement)
        else:  # t[i] = v, t.attr = v: a partial write into t
            root = _root_name(target)
            if root is not None:
                env[root] = _flat(env.get(root, False)) or _flat(value)
            for child in ast.iter_child_nodes(target):
                if isinstance(child, ast.expr) and child is not getattr(target, "value", None):
                    self._eval(child, env)

    def _set(self, name: str, value: Val, env: dict[str, Val], statement: ast.AST | None) -> None:
        """`name` holds `value` from `statement` on; a host fill's statement is remembered for the report."""
        if statement is not None and id(statement) in self.cell.fill_statements:
            self.assigned[name] = statement
            if _flat(env.get(name, False)) and not _flat(value):
                self.overwritten[name] = statement
            elif _flat(value):
                self.overwritten.pop(name, None)
        env[name] = value

    def _eval_target(self, target: ast.AST, env: dict[str, Val]) -> Val:
        root = _root_name(target)
        return env.get(root, False) if root is not None else False

    # expressions

    def _eval(self, node: ast.expr, env: dict[str, Val]) -> Val:
        self._tick()
        if isinstance(node, ast.Name):
            return env.get(node.id, False)
        if isinstance(node, ast.Constant):
            return False
        if isinstance(node, (ast.Tuple, ast.List)):
            return _bounded(tuple(_flat(self._eval(e, env)) if isinstance(e, ast.Starred) else self._eval(e, env)
                                  for e in node.elts))
        if isinstance(node, ast.Attribute):
            value = self._eval(node.value, env)
            return False if node.attr in METADATA_ATTRS else _flat(value)
        if isinstance(node, ast.Subscript):
            value = self._eval(node.value, env)
            index = self._eval(node.slice, env)
            if isinstance(value, tuple) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int) \
                    and -len(value) <= node.slice.value < len(value):
                return value[node.slice.value]
            return _flat(value) or _flat(index)
        if isinstance(node, ast.NamedExpr):
            value = self._eval(node.value, env)
            self._assign(node.target, value, env, node)
            return value
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, ast.IfExp):
            self._eval(node.test, env)
            return _join(self._eval(node.body, env), self._eval(node.orelse, env))
        # operators, comparisons, f-strings, lambdas, comprehensions: any part that depends
        result = False
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                result = _flat(self._eval(child, env)) or result
            elif isinstance(child, ast.comprehension):
                result = _flat(self._eval(child.iter, env)) or result
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            result = result or any(env.get(n.id, False) for n in ast.walk(node)
                                   if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
        return result

    def _call(self, node: ast.Call, env: dict[str, Val]) -> Val:
        func = node.func
        arguments = [*node.args, *(k.value for k in node.keywords)]
        values = [self._eval(a, env) for a in arguments]
        if self.cell._is_launch(node):
            assert isinstance(func, ast.Subscript)
            self._eval(func.slice, env)
            written = self.cell.launch_writes(node)
            for argument in arguments:
                root = _root_name(argument)
                if root is not None and root not in self.cell.inputs:
                    env[root] = True  # written by the kernel (or only read by it: lenient)
                    if written is None or argument in written:
                        self.buffers.add(root)
            return False
        if isinstance(func, ast.Name) and func.id in self.cell.functions and func.id not in env:
            return self._host_call(self.cell.functions[func.id], node, values, env)
        if isinstance(func, ast.Name) and func.id in HARMLESS_BUILTINS:
            return False
        if isinstance(func, ast.Attribute):
            receiver = self._eval(func.value, env)
            if func.attr in METADATA_METHODS:
                return False
            if func.attr in LIKE_FUNCTIONS:
                return any(_flat(v) for v in values[1:])
            if func.attr in NEW_METHODS:
                return any(_flat(v) for v in values)
            if func.attr.endswith("_") and not func.attr.endswith("__") and isinstance(func.value, ast.Name):
                name = func.value.id
                stored = any(_flat(v) for v in values)
                self._set(name, stored if func.attr in OVERWRITING_METHODS else _flat(env.get(name, False)) or stored,
                          env, self.current)
                return env[name]
            return _flat(receiver) or any(_flat(v) for v in values)
        return _flat(self._eval(func, env)) or any(_flat(v) for v in values)

    def _host_call(self, function: ast.FunctionDef, node: ast.Call, values: list[Val], env: dict[str, Val]) -> Val:
        """A call of the cell's own host function (the combine): run with its arguments' values; what
        it writes into a launch's buffers through a parameter reaches the caller's name (leniently)."""
        if self.depth >= CALL_DEPTH:
            return any(_flat(v) for v in values)
        params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        inner: dict[str, Val] = {}
        for param, value in zip(params, values[:len(node.args)]):
            inner[param] = value
        for keyword, value in zip(node.keywords, values[len(node.args):]):
            if keyword.arg is not None:
                inner[keyword.arg] = value
        self.depth += 1
        try:
            returns = self.run(function, inner)
        finally:
            self.depth -= 1
        for param, argument in zip(params, node.args):
            root = _root_name(argument)
            if root is not None and (param in self.holding_at_end.get(function.name, frozenset())
                                     or any(param in r.holding for r in returns)):
                env[root] = True
        result: Val | None = None
        for returned in returns:
            result = returned.value if result is None else _join(result, returned.value)
        return False if result is None else result


def _written_parameters(kernel: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """The kernel's parameters it stores into: the pointer operand that starts the address of a
    tl.store or tl.atomic_* (`y + row * N + cols` -> y), or the base of a block pointer."""
    params = {a.arg for a in [*kernel.args.posonlyargs, *kernel.args.args]}
    written: set[str] = set()
    for node in ast.walk(kernel):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and (node.func.attr == "store" or node.func.attr.startswith("atomic_"))):
            continue
        pointer = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "pointer"), None)
        while isinstance(pointer, ast.BinOp):
            pointer = pointer.left
        if isinstance(pointer, ast.Call):  # tl.make_block_ptr(base=..., ...) written inline
            pointer = next((k.value for k in pointer.keywords if k.arg == "base"),
                           pointer.args[0] if pointer.args else None)
        if isinstance(pointer, ast.Name) and pointer.id in params:
            written.add(pointer.id)
    return frozenset(written)


def _root_name(node: ast.AST) -> str | None:
    """The name under `t`, `t[i]`, `t.view(-1)`, `t.attr`."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        else:
            return None


def _binds(node: ast.AST) -> set[str]:
    """The names `node` binds (or deletes) in its scope: an assignment's, loop's or `with`'s target name, a
    parameter, a def or class, an `except ... as` or a match capture."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return {node.id}
    if isinstance(node, ast.arg):
        return {node.arg}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return {node.name}
    if isinstance(node, ast.MatchMapping) and node.rest:
        return {node.rest}
    if isinstance(node, ast.alias):
        return {(node.asname or node.name).split(".")[0]}
    return set()
