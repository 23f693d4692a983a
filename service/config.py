"""Settings from the environment (prefix KERNELGRADE_); every limit typed, with units."""
from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from sandbox.contract import DeviceMode, Limits

REPO_ROOT = Path(__file__).resolve().parents[1]
UNSAFE_LOCAL_CONSENT = "yes-i-understand"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KERNELGRADE_", env_nested_delimiter="__", extra="ignore")

    exercises_dir: Path = Field(REPO_ROOT / "exercises", description="folder of exercise folders")
    data_dir: Path = Field(Path("data"), description="database, job scratch, logs")
    sandbox: Literal["bwrap", "local"] = "bwrap"
    allow_unsafe_local_sandbox: str = Field("", description=f"must be '{UNSAFE_LOCAL_CONSENT}' to use the local backend")
    device: Literal["auto", "gpu", "interpreter"] = "auto"
    gpu_index: int = Field(0, ge=0)
    sandbox_python: str = Field(sys.executable, description="the interpreter that runs inside the sandbox")
    limits: Limits = Limits()

    def device_mode(self) -> DeviceMode:
        if self.device == "auto":
            return DeviceMode.gpu if gpu_present(self.gpu_index) else DeviceMode.interpreter
        return DeviceMode(self.device)

    def hidden_paths(self) -> list[Path]:
        """Folders the sandbox must never see, even if they sit inside a bound folder."""
        return [REPO_ROOT, self.exercises_dir.resolve(), self.data_dir.resolve()]


def gpu_present(index: int = 0) -> bool:
    return Path("/dev/nvidiactl").exists() and Path(f"/dev/nvidia{index}").exists()


@lru_cache
def get_settings() -> Settings:
    return Settings()
