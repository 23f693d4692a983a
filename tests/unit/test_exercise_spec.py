"""The exercise folder format: mutants with a fill per blank."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from service.config import REPO_ROOT
from service.exercises import Exercise, Mutant


def test_fills_replace_every_blank_in_order():
    exercise = Exercise(REPO_ROOT / "exercises/lesson05_row_sum")
    blanks = exercise.template.count("______")
    assert blanks >= 2
    fills = [f"FILL{i}" for i in range(blanks)]
    code = exercise.mutant_code(Mutant(id="m", description="d", fills=fills, expect={"code_points": 0}))
    assert "______" not in code
    assert [code.index(f) for f in fills] == sorted(code.index(f) for f in fills)
    with pytest.raises(ValueError, match="fills for"):
        exercise.mutant_code(Mutant(id="m", description="d", fills=fills[:-1], expect={"code_points": 0}))


def test_a_mutant_has_exactly_one_source():
    with pytest.raises(ValidationError, match="exactly one of fill, fills, edits or file"):
        Mutant(id="m", description="d", fill="x", fills=["x"], expect={"code_points": 0})


def _speed(**overrides) -> dict:
    speed = {"rows": 64, "cols": 1024, "draw_rows": 16, "seed": 1, "bytes": "4*M*N + 2*4*M", "bytes_note": "read x once",
             "baseline": {"label": "torch", "code": "(torch.mean(x, dim=1), torch.var(x, dim=1, unbiased=False))"},
             "claim": "reads the matrix once", "claim_source": "lesson"}
    return {**speed, **overrides}


def test_lesson06_speed_section_parses_and_builds_its_input_with_make_inputs():
    exercise = Exercise(REPO_ROOT / "exercises/lesson06_mean_var")
    speed = exercise.spec.speed
    assert speed is not None
    assert (speed.rows, speed.cols, speed.repeat) == (16384, 4096, 32)
    assert speed.ideal_bytes == 4 * 16384 * 4096 + 2 * 4 * 16384
    assert "读取矩阵一次" in speed.claim.zh and "x.mean()" in speed.claim.zh
    assert "reads the matrix once" not in speed.claim.zh and "x.mean()" in speed.claim.en
    arrays = exercise.make_inputs(speed.case(), speed.seed)
    assert arrays["x"].shape == (speed.draw_rows, speed.cols) and arrays["x"].dtype.name == "float32"


def test_speed_section_is_checked():
    from service.exercises import SpeedSpec, bytes_moved

    assert bytes_moved("4*M*(N + 1) // 2 - M", M=3, N=5) == 33
    assert SpeedSpec.model_validate(_speed()).repeat == 4
    with pytest.raises(ValidationError, match="must divide rows"):
        SpeedSpec.model_validate(_speed(draw_rows=48))
    with pytest.raises(ValidationError, match="only integers"):
        SpeedSpec.model_validate(_speed(bytes="__import__('os').getpid()"))
    with pytest.raises(ValidationError, match="only integers"):
        SpeedSpec.model_validate(_speed(bytes="M ** N"))
    with pytest.raises(ValidationError, match="not an expression"):
        SpeedSpec.model_validate(_speed(bytes="4 *"))
    with pytest.raises(ValidationError):
        SpeedSpec.model_validate(_speed(baseline={"label": "t", "code": "x = 1"}))  # a statement, not an expression


def test_speed_baseline_sees_only_torch_and_the_arguments():
    import yaml

    exercise = Exercise(REPO_ROOT / "exercises/lesson06_mean_var")
    data = yaml.safe_load((exercise.root / "exercise.yaml").read_text(encoding="utf-8"))
    data["questions"] = exercise.spec.model_dump(mode="json")["questions"]
    data["speed"] = _speed(baseline={"label": "t", "code": "open('/etc/passwd')"})
    from service.exercises import ExerciseSpec

    with pytest.raises(ValidationError, match=r"names \['open'\]"):
        ExerciseSpec.model_validate(data)
    data["speed"] = _speed(baseline={"label": "t", "code": "(lambda m: (m, torch.var(x, dim=1)))(x.mean(dim=1))"})
    label = ExerciseSpec.model_validate(data).speed.baseline.label  # a plain string: the same in every language
    assert label.in_("zh") == label.in_("en") == "t"


def test_fused_mean_var_atomic_speed_section_stacks_every_argument():
    exercise = Exercise(REPO_ROOT / "exercises/fused_mean_var_atomic")
    speed = exercise.spec.speed
    assert speed is not None and speed.repeat == 32 and speed.kwargs == {"block": 2048}
    assert "the naive two-kernel form reads 8 MB" in speed.claim.in_("zh") == speed.claim.in_("en") and speed.predicted_speedup == 2.0
    arrays = exercise.make_inputs(speed.case(), speed.seed)
    assert {name: a.shape for name, a in arrays.items()} == {"x": (2, 1 << 20), "sums": (2,), "sumsqs": (2,)}
