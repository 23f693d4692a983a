"""Step 5: what the exercise's `diagnose()` receives, for the pipeline that builds it; the type and
the helpers checks.py uses live in the exercise kit (service/exercises/kit.py)."""
from __future__ import annotations

from service.exercises.kit import CaseEvidence

__all__ = ["CaseEvidence"]
