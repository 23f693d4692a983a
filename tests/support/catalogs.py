"""Exercise catalogues for tests: the real one with a rule taken away, to prove the layer behind it.

fused_mean_var_atomic declares `host_code` (service/grading/host_fills.py), which refuses host code
that computes the result itself before anything runs. The runs behind that rule (the harness's
launch count, the kernel-alone and kernel-ablated runs of host_blanks.py) still guard exercises that
declare nothing and host code the rule does not see; their tests grade the same submissions on a
copy of the exercise without the declaration.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from service.config import REPO_ROOT


def without_host_rule(folder: Path, exercise_id: str = "fused_mean_var_atomic") -> Path:
    """A catalogue under `folder` holding only `exercise_id`, copied with its `host_code` removed."""
    target = folder / exercise_id
    shutil.copytree(REPO_ROOT / "exercises" / exercise_id, target)
    path = target / "exercise.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data.pop("host_code", None) is not None, f"{exercise_id} declares no host_code"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return folder
