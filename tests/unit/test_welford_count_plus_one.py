"""Welford's chunk count one too many (n_b = tl.sum(tl.where(mask, 1.0, 0.0)) + 1, third-party kernels,
fifth batch) was "matches none of the known misconceptions"; replayed chunk by chunk it is named
chunk_count_plus_one, from the outputs alone, and never for the right merge or the other known counts."""
from __future__ import annotations

from typing import Any

import numpy as np

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog, kit

WELFORD = ExerciseCatalog(REPO_ROOT / "exercises").get("welford_merge")
checks = WELFORD.checks


def _evidence(switches: dict[str, Any]) -> list[kit.CaseEvidence]:
    """Every case of the exercise as a kernel with `switches` would leave it (float32 outputs)."""
    out = []
    for case in WELFORD.spec.cases:
        x = checks.make_inputs(case, case.seed)["x"].astype(np.float64)
        block = int(case.kwargs.get("block", checks.DEFAULT_BLOCK))
        if switches.get("count") == "stride":
            switches = {**switches, "stride": case.stride or x.shape[1]}
        mean, var = (a.astype(np.float32).astype(np.float64) for a in checks._merge(x, block, **switches))
        truth = checks.reference(x)
        passed = bool(np.allclose(mean, truth["mean"], atol=1e-4, rtol=1e-4)
                      and np.allclose(var, truth["var"], atol=2e-4, rtol=2e-4))
        out.append(kit.CaseEvidence(case, x, {"mean": mean, "var": var}, truth, passed, {"x": x},
                                    tolerances=WELFORD.spec.outputs))
    return out


def _ids(switches: dict[str, Any]) -> list[str]:
    return [f.id for f in checks.diagnose(_evidence(switches))]


def test_a_count_one_too_many_is_named_on_every_case_it_fails():
    evidence = _evidence({"count": "plus_one"})
    failed = {ev.case.id for ev in evidence if not ev.passed}
    assert {"regular.n256", "boundary.n1", "probe.chunk_steps"} <= failed
    findings = checks.diagnose(evidence)
    assert [f.id for f in findings] == ["chunk_count_plus_one"]
    assert {c["case"] for c in findings[0].cases} == failed
    n1 = next(c for c in findings[0].cases if c["case"] == "boundary.n1")
    # one element counted as two: the mean halved, the variance x²/8
    assert np.isclose(n1["mean_obs"], n1["mean"] / 2, rtol=1e-5)
    assert np.isclose(n1["var_pred"], n1["mean"] ** 2 / 8, rtol=1e-5)


def test_the_right_merge_and_the_other_counts_are_not_called_plus_one():
    assert _ids({}) == []
    for switches, named in (({"count": "block"}, "last_chunk_counted_as_block"),
                            ({"count": "remaining"}, "chunk_count_remaining"),
                            ({"count": "row"}, "chunk_count_is_row")):
        ids = _ids(switches)
        assert named in ids and "chunk_count_plus_one" not in ids, (switches, ids)


def test_a_count_two_too_many_is_not_called_plus_one():
    """The replay must predict the numbers, not only their direction: valid + 2 is unexplained."""
    evidence = _evidence({"count": "plus_one"})
    for ev in evidence:
        x = ev.inputs
        block = int(ev.case.kwargs.get("block", checks.DEFAULT_BLOCK))
        n_b = [min(block, x.shape[1] - s) + 2 for s in range(0, x.shape[1], block)]
        total = float(sum(n_b))
        # the merged mean of counts valid + 2 is Σx / Σn_b (the variance is not needed to refute it)
        mean = (x.sum(axis=1) / total).astype(np.float32).astype(np.float64)
        assert ev.observed is not None
        ev.observed = {"mean": mean, "var": ev.observed["var"]}
        ev.passed = False
    assert "chunk_count_plus_one" not in [f.id for f in checks.diagnose(evidence)]
