"""Long Softmax with every exponent scaled by a constant (third-party kernels, fifth batch): log2(e) cut
to 1.44 in tl.exp2 gives softmax(0.998·x), which was "matches none of the known misconceptions". The
scale is read from the outputs (log z against x is a line of slope k in each row) and named when
softmax(k·x) is the output and differs from the right one. The kernel is replayed in numpy float32 on
each case's own inputs; a base-2 softmax keeps its own name, and other mistakes are not called this."""
from __future__ import annotations

import numpy as np

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.exercises.kit import CaseEvidence

LONG_SOFTMAX = ExerciseCatalog(REPO_ROOT / "exercises").get("puzzle_long_softmax")
checks = LONG_SOFTMAX.checks


def _evidence(kernel) -> list[CaseEvidence]:
    out = []
    for case in LONG_SOFTMAX.spec.cases:
        x = checks.make_inputs(case, case.seed)["x"].astype(np.float64)
        with np.errstate(all="ignore"):
            z = kernel(x.astype(np.float32)).astype(np.float32).astype(np.float64)
        expected = checks.reference(x)
        passed = bool(np.allclose(z, expected["z"], atol=1e-6, rtol=1e-4))
        out.append(CaseEvidence(case, x, {"z": z}, expected, passed, {"x": x}))
    return out


def _base(x: np.ndarray, log2_e: float) -> np.ndarray:
    e = np.exp2(np.float32(log2_e) * (x - x.max(axis=1, keepdims=True)))
    return e / e.sum(axis=1, keepdims=True, dtype=np.float32)


def _ids(kernel) -> dict[str, dict]:
    return {f.id: f.cases[0] for f in checks.diagnose(_evidence(kernel))}


def test_log2e_cut_short_is_named_with_its_scale():
    found = _ids(lambda x: _base(x, 1.44))
    assert list(found) == ["exponent_scaled"], found
    assert abs(found["exponent_scaled"]["log2e_used"] - 1.44) < 1e-4


def test_a_base2_softmax_and_a_zero_padding_keep_their_names():
    assert list(_ids(lambda x: _base(x, 1.0))) == ["exp2_without_log2e"]
    assert "exponent_scaled" not in _ids(lambda x: _base(x, checks.LOG2E) * np.float32(0.9))  # rows sum to 0.9
