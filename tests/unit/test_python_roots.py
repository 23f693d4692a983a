"""Which folders a sandbox binds for its Python (sandbox/backends/bwrap.py, python_roots)."""
from __future__ import annotations

import sys
from pathlib import Path

from sandbox.backends.bwrap import python_roots


def test_own_interpreter_binds_its_prefixes():
    roots = python_roots(sys.executable)
    assert any(Path(sys.prefix).resolve() == r or Path(sys.prefix).resolve().is_relative_to(r) for r in roots) \
        or Path(sys.prefix).resolve().is_relative_to("/usr")


def test_other_venv_on_the_same_base_binds_its_own_prefix(tmp_path: Path):
    # A venv made from the same base Python: its bin/python is a symlink to the binary this process
    # also resolves to, but its packages (another triton, say) live under its own prefix.
    venv = tmp_path / "other-venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    roots = python_roots(str(venv / "bin" / "python"))
    assert venv.resolve() in roots
    base = Path(sys.executable).resolve().parent.parent
    assert base.is_relative_to("/usr") or any(base.is_relative_to(r) for r in roots)
