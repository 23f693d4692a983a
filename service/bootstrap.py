"""The composition root: a `Grader` wired from settings (sandbox backend, memo, compile cache, assist)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox.backends import make_backend
from sandbox.contract import DeviceMode
from sandbox.runner import SandboxRunner
from service.config import UNSAFE_LOCAL_CONSENT
from service.exercises import ExerciseCatalog
from service.grading.model_assist import ModelAssist
from service.grading.pipeline import Grader

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from service.config import Settings


def build_grader(settings: Settings, *, sessions: sessionmaker[Session] | None = None) -> Grader:
    """A grader wired from settings (sandbox backend, limits, device). With `sessions` (the
    service's database) and `settings.verdict_memo`, code results are memoised in the database."""
    backend = make_backend(settings.sandbox, python=settings.sandbox_python, hidden_paths=settings.hidden_paths(),
                           allow_unsafe_local=settings.allow_unsafe_local_sandbox == UNSAFE_LOCAL_CONSENT)
    assist = None
    if settings.model_assist_url:
        assist = ModelAssist(base_url=settings.model_assist_url, model=settings.model_assist_model,
                             api_key=settings.model_assist_api_key)
    memo = None
    if sessions is not None and settings.verdict_memo:
        from service.db.memo import DbMemo  # only with a database: the CLI grader runs without SQLAlchemy's models

        memo = DbMemo(sessions)
    mode = settings.device_mode()
    warmer = None
    if settings.compile_cache and mode is DeviceMode.gpu and hasattr(backend, "with_triton_cache"):
        from sandbox.backends.base import TritonCacheMount
        from sandbox.compile_cache import SharedCompileCache, default_root
        from service.grading.compile_warm import CompileWarmer

        root = settings.compile_cache_dir or default_root(settings.data_dir.resolve() / "triton-shared")
        cache = SharedCompileCache(root)
        backend = backend.with_triton_cache(TritonCacheMount(cache.root))
        warmer = CompileWarmer(cache=cache, backend=backend, limits=settings.limits, device_index=settings.gpu_index,
                               threads=settings.compile_cache_threads, parallel=settings.compile_cache_parallel,
                               parallel_wait_s=settings.compile_cache_parallel_wait_s)
    return Grader(catalog=ExerciseCatalog(settings.exercises_dir),
                  runner=SandboxRunner(backend=backend, limits=settings.limits,
                                       pool_starts=settings.warm_pool_starts or None),
                  mode=mode, device_index=settings.gpu_index, assist=assist, memo=memo,
                  warm_pool=settings.warm_pool, compile_cache=warmer, prewarm=settings.compile_cache_prewarm,
                  speed_after_grade=settings.speed_after_grade)
