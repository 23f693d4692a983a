"""The exercise kit (issue 14.1): every checks.py imports only service.exercises.kit (plus numpy and
the standard library) and type-checks against its Checks protocol; the exercises package imports
nothing from grading; every diagnosis message exists in Chinese and English."""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog, kit
from service.messages import Catalogue

EXERCISES = REPO_ROOT / "exercises"
CATALOG = ExerciseCatalog(EXERCISES)
CHECKS = sorted(EXERCISES.glob("*/checks.py"))
ALLOWED = {"service.exercises.kit", "numpy"}
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def _imports(tree: ast.AST) -> list[str]:
    """Every module an import statement names, at any depth (a lazy import counts too)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            found += [f"{module}.{alias.name}" if module == "service.exercises" else module for alias in node.names]
    return found


def test_there_are_nine_checks_modules():
    assert len(CHECKS) == len(CATALOG.ids()) == 9


@pytest.mark.parametrize("path", CHECKS, ids=lambda p: p.parent.name)
def test_checks_imports_only_the_kit_numpy_and_the_standard_library(path: Path):
    for module in _imports(ast.parse(path.read_text(encoding="utf-8"))):
        top = module.split(".")[0]
        assert module in ALLOWED or (top in sys.stdlib_module_names and top != "importlib") or module == "__future__", \
            f"{path.parent.name}/checks.py imports {module}"


def test_the_import_check_can_fail():
    tree = ast.parse("from service.grading.diagnose import CaseEvidence\nimport service.report\n"
                     "def f():\n    from service.exercises import kit, loader\n")
    assert _imports(tree) == ["service.grading.diagnose", "service.report", "service.exercises.kit",
                              "service.exercises.loader"]


def test_the_exercises_package_imports_nothing_from_grading():
    """grading imports exercises, never the reverse (so no cycle through them, lazy imports included)."""
    for path in sorted((REPO_ROOT / "service" / "exercises").glob("*.py")):
        bad = [m for m in _imports(ast.parse(path.read_text(encoding="utf-8"))) if m.startswith("service.grading")]
        assert not bad, f"{path.name} imports {bad}"
    probe = "import sys, service.exercises; print(sorted(m for m in sys.modules if m.startswith('service.grading')))"
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_type_check_against_the_kit(tmp_path: Path):
    """mypy on every checks.py, and every module assigned to the Checks protocol (and MakesInputs
    where it draws its own inputs); a module without make_inputs does not pass as MakesInputs."""
    pytest.importorskip("mypy")
    lines = ["from service.exercises.kit import Checks, MakesInputs"]
    for path in CHECKS:
        name = f"checks_{path.parent.name}"
        shutil.copy(path, tmp_path / f"{name}.py")
        lines += [f"import {name}", f"{name}_checks: Checks = {name}"]
        if "def make_inputs" in path.read_text(encoding="utf-8"):
            lines.append(f"{name}_inputs: MakesInputs = {name}")
    (tmp_path / "conform.py").write_text("\n".join(lines) + "\n")
    (tmp_path / "negative.py").write_text("import checks_lesson06_mean_var\n"
                                          "from service.exercises.kit import MakesInputs\n"
                                          "wrong: MakesInputs = checks_lesson06_mean_var\n")
    mypy = [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--follow-imports=silent", "--no-error-summary",
            "--cache-dir", str(tmp_path / ".mypy_cache")]
    env = {"MYPYPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"}
    files = sorted(str(p) for p in tmp_path.glob("checks_*.py"))
    ok = subprocess.run([*mypy, str(tmp_path / "conform.py"), *files], cwd=tmp_path, env=env, capture_output=True,
                        text=True, timeout=300, check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    wrong = subprocess.run([*mypy, str(tmp_path / "negative.py")], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=300, check=False)
    assert wrong.returncode == 1 and "MakesInputs" in wrong.stdout, wrong.stdout + wrong.stderr


def test_the_loader_refuses_a_checks_module_without_diagnose(tmp_path: Path):
    shutil.copytree(EXERCISES / "lesson06_mean_var", tmp_path / "lesson06_mean_var")
    (tmp_path / "lesson06_mean_var" / "checks.py").write_text("def reference(x):\n    return {}\n")
    with pytest.raises(ValueError, match="diagnose"):
        _ = ExerciseCatalog(tmp_path).get("lesson06_mean_var").checks


def _dummy(names: frozenset[str]) -> dict[str, object]:
    return {name: 7 for name in names}


@pytest.mark.parametrize("exercise_id", CATALOG.ids())
def test_every_message_has_a_chinese_and_an_english_text(exercise_id: str):
    """Both languages, the same parameters (checked on load), Chinese in zh and none left in en."""
    catalogue = Catalogue.load(EXERCISES / exercise_id / "messages.yaml")
    assert catalogue.codes, f"{exercise_id}: no messages.yaml"
    for code in sorted(catalogue.codes):
        params = _dummy(catalogue.parameters(code))
        zh, en = catalogue.render(code, "zh", **params), catalogue.render(code, "en", **params)
        assert not CJK.search(en), f"{exercise_id}/{code}: {en}"
        if len(zh) > 40:  # a whole sentence (short phrases such as exp(0 − max) read the same)
            assert CJK.search(zh), f"{exercise_id}/{code}: {zh}"


@pytest.mark.parametrize("path", CHECKS, ids=lambda p: p.parent.name)
def test_every_diagnosis_message_is_one_checks_can_report(path: Path):
    """A diagnosis's message has its id as code, so each undotted code must be an id checks.py names:
    a string in it, or a kit constant it uses (kit.ROW_BLOCK_IGNORED; kit.store_out_of_bounds()
    yields kit.STORE_OUT_OF_BOUNDS)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    for node in ast.walk(tree):
        named = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "kit"
        if named and isinstance(constant := getattr(kit, node.attr.upper(), None), str):
            strings.add(constant)
    codes = {c for c in Catalogue.load(path.parent / "messages.yaml").codes if "." not in c}
    assert codes and not codes - strings, f"{path.parent.name}: messages for no diagnosis: {sorted(codes - strings)}"


def test_a_diagnosis_message_has_the_diagnosis_id_as_code():
    with pytest.raises(ValueError, match="must be the id"):
        kit.report({"bessel": [{"case": "c"}]}, lambda key, cases: kit.Say("part.at", {}))
    (finding,) = kit.report({"bessel": [{"case": "c"}]})
    assert finding.message == kit.Say("bessel", {"names": ["c"], "case": "c"})


def test_the_kit_shared_messages_are_in_both_languages():
    shared = Catalogue.load(REPO_ROOT / "service" / "exercises" / "messages.yaml")
    assert kit.ROW_BLOCK_IGNORED in shared.codes
    en = shared.render(kit.ROW_BLOCK_IGNORED, "en", **_dummy(shared.parameters(kit.ROW_BLOCK_IGNORED)))
    assert "one row" in en and not CJK.search(en)


def test_a_finding_is_rendered_in_the_language_asked_with_both_in_the_evidence():
    exercise = CATALOG.get("puzzle_long_sum")
    case = next(c for c in exercise.spec.cases if c.id == "regular.aligned")  # N0 = 8, B0 = 4
    x = exercise.make_inputs(case, 1)["x"].astype(np.float64)
    ref = x.sum(axis=1)
    z = np.full(8, np.nan)
    z[:2] = ref[:2]  # two programs, each wrote only its first row
    ev = kit.CaseEvidence(case, x, {"z": z.astype(np.float32)}, {"z": ref}, False, {"x": x})
    (zh,) = exercise.diagnose([ev])  # the exercise's language
    (en,) = exercise.diagnose([ev], language="en")
    assert zh.id == en.id == kit.ROW_BLOCK_IGNORED and zh.evidence == en.evidence
    assert CJK.search(zh.message) and "B0" in zh.message
    assert en.message.startswith("On regular.aligned, each program handled one row") and not CJK.search(en.message)
    assert en.evidence["messages"] == {"zh": zh.message, "en": en.message}


def test_a_list_parameter_is_joined_the_language_s_way():
    messages = kit.Messages(Catalogue({"m": {"zh": "在 {names} 上", "en": "on {names}"}}))
    said = kit.say_about("m", [{"case": "a"}, {"case": "b"}])
    assert messages.render(said, "zh") == "在 a、b 上" and messages.render(said, "en") == "on a, b"


def test_across_names_the_cases_that_depend_on_each_other():
    """The skeleton: failed cases only; ACROSS findings named once every case is seen, after the others."""
    case = CATALOG.get("lesson06_mean_var").spec.cases[0]
    evidence = [kit.CaseEvidence(case.model_copy(update={"id": f"c{i}"}), np.zeros((1, 1)), {}, {}, passed)
                for i, passed in enumerate([False, True, False, False])]

    def classify(ev: kit.CaseEvidence):
        if ev.case.id == "c0":
            yield "plain", {"case": ev.case.id}
        else:
            yield kit.ACROSS, {"case": ev.case.id}

    def across(cases: list[kit.Numbers]):
        for c in cases:
            yield "together", {**c, "with": len(cases)}

    findings = kit.collect(evidence, classify, across=across)
    assert list(findings) == ["plain", "together"]
    assert findings["together"] == [{"case": "c2", "with": 2}, {"case": "c3", "with": 2}]
    with pytest.raises(ValueError, match="across"):
        kit.collect(evidence, classify)


def test_a_cause_named_across_every_case_leads_only_where_the_exercise_lists_it():
    """`causes` (opt-in): an id `across` gave every case it saw leads, before a single case's
    finding; an id not listed, or one that leaves a case out, keeps the order found."""
    case = CATALOG.get("lesson06_mean_var").spec.cases[0]
    evidence = [kit.CaseEvidence(case.model_copy(update={"id": f"c{i}"}), np.zeros((1, 1)), {}, {}, False)
                for i in range(3)]

    def classify(ev: kit.CaseEvidence):
        yield ("symptom", {"case": ev.case.id}) if ev.case.id == "c0" else (kit.ACROSS, {"case": ev.case.id})

    def across_all(cases: list[kit.Numbers]):
        for c in cases:
            yield "cause", c

    def across_some(cases: list[kit.Numbers]):
        for c in cases:
            yield ("cause" if c["case"] == "c1" else "unexplained"), c

    assert list(kit.collect(evidence, classify, across=across_all)) == ["symptom", "cause"]  # not opted in
    led = kit.collect(evidence, classify, across=across_all, causes=("cause",))
    assert list(led) == ["cause", "symptom"]
    assert led["cause"] == [{"case": "c1"}, {"case": "c2"}] and led["symptom"] == [{"case": "c0"}]
    assert list(kit.collect(evidence, classify, across=across_some, causes=("cause",))) == \
        ["symptom", "cause", "unexplained"]
    assert list(kit.collect(evidence, classify, across=across_all, causes=("other",))) == ["symptom", "cause"]


@pytest.mark.parametrize("exercise_id", ["puzzle_outer_add", "puzzle_long_sum"])
def test_the_causes_an_exercise_lists_are_diagnoses_it_can_report(exercise_id: str):
    exercise = CATALOG.get(exercise_id)
    causes = exercise.checks.CAUSES
    said = Catalogue.load(EXERCISES / exercise_id / "messages.yaml")
    assert causes and all(cause in said for cause in causes), causes



def test_a_mistake_is_ruled_out_by_the_tolerance_the_exercise_declares():
    exercise = CATALOG.get("welford_merge")
    case = exercise.spec.cases[0]
    truth = np.array([1.0e-3, 2.0, -50.0])
    allowed = exercise.spec.outputs["var"].atol + exercise.spec.outputs["var"].rtol * np.abs(truth)
    ev = kit.CaseEvidence(case, truth, {}, {}, True, tolerances=exercise.spec.outputs)
    assert not kit.off_by_tolerances(ev, "var", truth + 9 * allowed, truth, 10)
    assert kit.off_by_tolerances(ev, "var", truth - 11 * allowed, truth, 10)
    # a case that carries no tolerance for an output rules nothing out by it
    assert not kit.off_by_tolerances(kit.CaseEvidence(case, truth, {}, {}, True), "var", truth + 1e6, truth, 10)
