"""Path containment, for what a backend binds or hides (bubblewrap and docker alike)."""
from __future__ import annotations

import os


def is_within(path: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """`path` is `folder` or lies under it, compared as normalised text (nothing is resolved)."""
    path, folder = os.path.normpath(path), os.path.normpath(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")
