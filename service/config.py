"""Settings from the environment (prefix KERNELGRADE_); every limit typed, with units."""
from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from sandbox.contract import DeviceMode, Limits
from sandbox.env_lists import listed

REPO_ROOT = Path(__file__).resolve().parents[1]
UNSAFE_LOCAL_CONSENT = "yes-i-understand"


def _hosts(hosts: list[str]) -> list[str]:
    for host in hosts:
        if "://" in host or any(c.isspace() for c in host):
            raise ValueError(f"{host!r} is not a host name or address (write 127.0.0.1, hooks.example.org; no scheme)")
    return hosts


# Settings that hold lists: the environment may write them comma-separated or as JSON (NoDecode keeps
# pydantic-settings from insisting on JSON before _listed sees the text).
HostList = Annotated[list[str], NoDecode, BeforeValidator(listed), AfterValidator(_hosts)]
SecondsList = Annotated[list[Annotated[float, Field(ge=0)]], NoDecode, BeforeValidator(listed)]
DeviceList = Annotated[list[Annotated[int, Field(ge=0)]], NoDecode, BeforeValidator(listed)]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KERNELGRADE_", env_nested_delimiter="__", extra="ignore")

    exercises_dir: Path = Field(REPO_ROOT / "exercises", description="folder of exercise folders")
    data_dir: Path = Field(Path("data"), description="database, job scratch, logs")
    # docker: one container per run; its settings are KERNELGRADE_DOCKER_* (sandbox/backends/docker.py: DockerOptions)
    sandbox: Literal["bwrap", "docker", "local"] = "bwrap"
    allow_unsafe_local_sandbox: str = Field("",
                                            description=f"must be '{UNSAFE_LOCAL_CONSENT}' to use the local backend")
    device: Literal["auto", "gpu", "interpreter"] = "auto"
    gpu_index: int = Field(0, ge=0)
    gpus: DeviceList = Field(default_factory=list,
                             description="the grading lanes of `serve`: one per GPU index listed, each with its own "
                                         "warm pool (e.g. 0,1); an index listed twice simulates two lanes on one "
                                         "device (0,0; on the interpreter too); empty: one lane on gpu_index")
    sandbox_python: str = Field(sys.executable, description="the interpreter that runs inside the sandbox")
    limits: Limits = Limits()
    speed_after_grade: bool = Field(True, description=(
        "GPU, exercises with `speed:`: the service writes the grade as soon as the cases are in and the speed card "
        "follows as a report revision (docs/grading.md); false: the grading waits for the card, as before #20.1"))
    warm_pool: int = Field(2, ge=0, description="sandboxes per (mode, GPU) started ahead of demand by the service's "
                                                "workers (torch imported, CUDA up); 0: every attempt starts cold")
    sandbox_start: Literal["fresh", "fork"] = Field("fresh", description="bwrap: 'fork' forks each cold attempt from a "
                                                    "template that imported torch (sandbox/forkserver.py; needs a "
                                                    "pids cgroup, else fresh); read by the runner itself")
    warm_pool_starts: int = Field(0, ge=0, description="sandboxes of one pool in start-up at once (a refill after a "
                                                       "burst); 0: the pool's size, at most one per CPU core")
    compile_cache: bool = Field(True, description="GPU mode, bwrap: every sandbox reads compiled kernels from a shared "
                                                  "read-only cache that only the trusted side fills (reference, "
                                                  "mutants, programs graded before)")
    compile_cache_dir: Path | None = Field(None, description="default: <data_dir>/triton-shared")
    compile_cache_prewarm: bool = Field(True, description="when the service starts, compile every exercise's reference "
                                                          "solution and mutants into the shared cache (background)")
    compile_cache_threads: int = Field(2, ge=1, description="compile runs at a time when filling the shared cache")
    compile_cache_parallel: int = Field(0, ge=0, description="warm compile sandboxes per GPU that compile a new "
                                                             "program's specialisations in parallel before its grading "
                                                             "run (0: off; the grading sandbox compiles them itself)")
    compile_cache_parallel_wait_s: float = Field(5.0, ge=0, description="the most a grading waits for those "
                                                                        "compile runs; 0: it starts at once and finds "
                                                                        "what they published in time")
    verdict_memo: bool = Field(True, description="the service reuses code results of byte-identical programs "
                                                 "(deterministic exercises; written answers are always re-scored)")

    # --- the service --------------------------------------------------------------------------
    database_url: str | None = Field(None, description="default: SQLite (WAL) at <data_dir>/kernelgrade.db")
    queue: Literal["inprocess", "celery"] = Field("inprocess",
                                                  description="who grades: threads of `serve`, or Celery workers")
    broker_url: str = Field("redis://127.0.0.1:6379/0", description="Celery broker (queue=celery)")
    worker_lane: Literal["all", "fast", "sandbox"] = Field(
        "all", description="Celery: the queues `kernelgrade worker` consumes: fast (claims, memo hits, written "
                           "answers, reports; no sandbox), sandbox (program runs; its GPU's warm pool), or all")
    workers: int = Field(0, ge=0, description="Celery: grading threads of `kernelgrade worker` (0: one per GPU, 1 on "
                                              "the interpreter); serve: sandbox threads per lane (0: warm_pool, at "
                                              "least 1)")
    fast_workers: int = Field(4, ge=1, description="serve: threads that claim submissions and do all the grading that "
                                                   "needs no sandbox (memo hits, refused fills, written answers, "
                                                   "reports); runs go to the lanes")
    lease_s: float = Field(60.0, gt=0, description="a worker's hold on a submission, renewed while it grades")
    max_attempts: int = Field(3, ge=1,
                              description="leases a submission may lose (dead workers) before it is not_gradable")
    max_queue: int = Field(2000, ge=1, description="queued + running submissions before POST answers 503")
    max_queue_per_course: int = Field(1000, ge=1, description="queued + running submissions of one course before its "
                                                              "POST answers 503: one course cannot fill max_queue "
                                                              "and turn every other course away")
    max_body_bytes: int = Field(256 * 1024, gt=0, description="request body cap")
    max_body_seconds: float = Field(60.0, gt=0, description="time to send a request's whole body before the "
                                                            "answer is 408 and the connection is closed")
    max_wait_s: float = Field(30.0, ge=0, description="upper bound of POST ?wait=")
    max_waiting: int = Field(16, ge=0, description="POST ?wait= requests waiting at once in one API process (each "
                                                   "holds one of the process's 40 route threads), a quarter of "
                                                   "them (at least 1) per course; past that a POST answers at once")
    max_batch: int = Field(100, ge=1, description="submissions in one batch request")
    rate_limit_per_minute: int = Field(600, ge=1, description="requests per API key per minute")
    rate_limit_storage_url: str | None = Field(None, description="where the per-key request counts live, as a `limits` "
                                                                 "storage URL (redis://…, memory://); default: the "
                                                                 "broker's Redis when queue=celery (one budget for "
                                                                 "every API replica), else this process's memory")
    rate_limit_key_prefix: str = Field("kernelgrade-ratelimit", min_length=1,
                                       description="prefix of the rate limit's keys in Redis (installations sharing "
                                                   "one Redis)")
    webhook_allowed_hosts: HostList = Field(default_factory=list,
                                            description="hosts that may get http:// or private-address callbacks "
                                                        "(tests, intranets); comma-separated or a JSON array")
    webhook_timeout_s: float = Field(10.0, gt=0)
    webhook_backoff_s: SecondsList = Field(default_factory=lambda: [10.0, 60.0, 300.0, 1800.0, 7200.0],
                                           description="waits between delivery attempts; comma-separated or a JSON "
                                                       "array")
    public_url: str = Field("", description="base URL used in links (default: the request's)")
    regrade_window: int = Field(8, ge=1, description="submissions of one bulk regrade in the queue at a time")
    webhook_legacy_signature: bool = Field(True, description="also send the pre-Standard-Webhooks header "
                                                             "Kernelgrade-Signature (deprecated; docs/api.md)")

    # --- the pages (student feedback, TA review) ----------------------------------------------
    session_secret: str = Field("", description="signs the TA pages' session cookie; empty: a random one per "
                                                "process (TAs sign in again after a restart)")
    session_max_age_s: int = Field(8 * 3600, gt=0, description="how long a TA's sign-in lasts")

    # --- LTI 1.3 (service/lti): launches from an LMS, deep linking, grades back --------------
    lti_allowed_hosts: HostList = Field(default_factory=list,
                                        description="platform hosts the tool may call over http or at private "
                                                    "addresses (an intranet LMS, tests); others must be https and "
                                                    "public; comma-separated or a JSON array")
    lti_http_timeout_s: float = Field(10.0, gt=0, description="each call to a platform (keys, token, scores, roster)")
    lti_nonce_lifetime_s: int = Field(600, gt=0, description="from the OIDC login to the launch")
    lti_launch_lifetime_s: int = Field(12 * 3600, gt=0, description="how long a launched page may still submit")
    lti_key_set_max_age_s: int = Field(3600, gt=0, description="a platform's JWKS is fetched again after this")
    lti_tool_key_grace_s: int = Field(7 * 86400, ge=0, description="a rotated-out tool key stays published this long")
    lti_roster_max_age_s: int = Field(3600, gt=0, description="a launch asks for the roster again when it is older")
    lti_score_backoff_s: SecondsList = Field(default_factory=lambda: [10.0, 60.0, 300.0, 1800.0, 7200.0],
                                             description="waits between attempts at posting a score; "
                                                         "comma-separated or a JSON array")

    # --- optional model-assisted review of written answers (off unless a URL is set) ----------
    model_assist_url: str | None = Field(None, description="OpenAI-compatible base URL, e.g. http://host:8000/v1")
    model_assist_model: str = Field("", description="model name sent to that endpoint")
    model_assist_api_key: str = Field("", description="bearer token for that endpoint (from the environment)")

    def device_mode(self) -> DeviceMode:
        if self.device == "auto":
            return DeviceMode.gpu if gpu_present(self.gpu_index) else DeviceMode.interpreter
        return DeviceMode(self.device)

    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{(self.data_dir / 'kernelgrade.db').resolve()}"

    def rate_limit_storage(self) -> str:
        if self.rate_limit_storage_url:
            return self.rate_limit_storage_url
        if self.queue == "celery" and self.broker_url.startswith(("redis://", "rediss://")):
            return self.broker_url
        return "memory://"

    def worker_count(self) -> int:
        if self.workers:
            return self.workers
        if self.device_mode() is DeviceMode.gpu:
            return max(1, sum(1 for p in Path("/dev").glob("nvidia[0-9]*")))
        return 1

    def lane_devices(self) -> list[int]:
        """The device index of each grading lane of `serve` (service/worker/lanes.py)."""
        return list(self.gpus) or [self.gpu_index]

    def lane_threads(self) -> int:
        """Sandbox threads per lane: one per warm sandbox, so a free thread mostly finds one ready."""
        return self.workers or max(1, self.warm_pool)

    def hidden_paths(self) -> list[Path]:
        """Folders the sandbox must never see, even if they sit inside a bound folder."""
        return [REPO_ROOT, self.exercises_dir.resolve(), self.data_dir.resolve()]


def gpu_present(index: int = 0) -> bool:
    return Path("/dev/nvidiactl").exists() and Path(f"/dev/nvidia{index}").exists()


@lru_cache
def get_settings() -> Settings:
    return Settings()
