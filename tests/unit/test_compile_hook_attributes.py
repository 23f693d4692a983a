"""The compile-time hooks read attributes of values the student's code reaches with a default, and a
value whose own `__getattr__` raises other than AttributeError (Triton 3.6's tl.tuple raises ValueError,
which getattr's default does not catch) gets the default: a call of it is refused in words, not a crash.
"""
from __future__ import annotations

import ast
import types

import pytest

from sandbox import gpu_compile


class Stubborn:
    """Raises ValueError for any attribute it lacks, as Triton 3.6's tl.tuple does."""

    def __getattr__(self, name):
        raise ValueError(f"no {name} here")

    def __call__(self, *args, **kwargs):
        return None


def test_an_attribute_of_a_value_whose_getattr_raises_is_the_default():
    assert gpu_compile._attribute(Stubborn(), "__func__", "default") == "default"
    assert gpu_compile._attribute(Stubborn(), "__self__") is None
    assert gpu_compile._attribute(types.SimpleNamespace(fn=1), "fn", 2) == 1
    assert gpu_compile._student_function(Stubborn()) is False


def test_calling_such_a_value_at_compile_time_is_refused_in_words(monkeypatch):
    cg = pytest.importorskip("triton.compiler.code_generator")
    generator = cg.CodeGenerator
    # installed here and taken back after the test: other tests of this worker see Triton as it was
    monkeypatch.setattr(generator, "call_Function", generator.call_Function)
    monkeypatch.setattr(generator, "get_Attribute", generator.get_Attribute)
    monkeypatch.setattr(generator, "_kernelgrade_restricted", False, raising=False)
    if not gpu_compile.restrict_compile_time_calls():
        pytest.skip("this Triton lacks the code generator's hooks")
    src = "def k():\n    f()\n"
    node = ast.parse(src).body[0].body[0].value
    fake = types.SimpleNamespace(jit_fn=types.SimpleNamespace(src=src), cur_node=node)
    with pytest.raises(cg.UnsupportedLanguageConstruct) as refused:
        generator.call_Function(fake, node, Stubborn(), [], {})
    assert "Stubborn" in str(refused.value)
