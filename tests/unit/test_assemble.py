from __future__ import annotations

from service.config import REPO_ROOT
from service.grading.assemble import assemble
from service.grading.extract import extract

TEMPLATE = (REPO_ROOT / "exercises/lesson06_mean_var/template.py").read_text(encoding="utf-8")
SOLUTION = (REPO_ROOT / "exercises/lesson06_mean_var/solution.py").read_text(encoding="utf-8")


def program_for(code: str):
    return assemble(TEMPLATE, extract(TEMPLATE, code).fill_sources)


def test_identical_answers_give_byte_identical_programs():
    a = program_for(TEMPLATE.replace("______", "cols<N"))
    b = program_for(TEMPLATE.replace("______", "( cols <  N )").replace("# TODO", "# mine"))
    assert a.source == b.source and a.digest == b.digest
    assert program_for(TEMPLATE.replace("______", "mask")).digest != a.digest


def test_solution_fill_reproduces_the_solution_cell():
    program = program_for(SOLUTION)
    assert program.source.replace("  # TODO", "") == SOLUTION


def test_given_check_is_split_off_with_line_numbers_kept():
    program = program_for(SOLUTION)
    source_lines = program.source.splitlines()
    module_lines, check_lines = program.module.splitlines(), program.given_check.splitlines()
    assert len(module_lines) == len(check_lines) == len(source_lines)
    loop = next(i for i, line in enumerate(source_lines) if line.startswith("for shape in"))
    assert check_lines[loop] == source_lines[loop] and module_lines[loop] == ""
    assert "def mean_var" in program.module and "def mean_var" not in program.given_check
    assert "assert_close" in program.given_check and "assert_close" not in program.module


def test_the_same_fills_are_assembled_once():
    """A program seen before (a memo hit) is not assembled and parsed again: the same canonical fills
    give the same Program object; other fills, or a fill that breaks the cell, are assembled anew."""
    fills = extract(TEMPLATE, TEMPLATE.replace("______", "cols < N")).fill_sources
    first = assemble(TEMPLATE, fills)
    assert assemble(TEMPLATE, list(fills)) is first
    assert assemble(TEMPLATE, ["mask"]) is not first
    for _ in range(2):  # a refused substitution is refused every time (nothing kept)
        try:
            assemble(TEMPLATE, ["mask)"])
        except SyntaxError:
            continue
        raise AssertionError("a fill that breaks the cell was assembled")
