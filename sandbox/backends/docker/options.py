"""Settings of the docker backend (environment: KERNELGRADE_DOCKER_*)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from sandbox.env_lists import TextList

DEFAULT_IMAGE = "kernelgrade:latest"


class DockerOptions(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KERNELGRADE_DOCKER_", extra="ignore")

    image: str = Field(DEFAULT_IMAGE, description="the sandbox image (`kernelgrade image build` makes one)")
    python: str = Field("/opt/venv/bin/python", description="the interpreter inside a self-contained image")
    runtime: str | None = Field(None,
                                description="another OCI runtime, e.g. runsc (gVisor); None: the daemon's default")
    cpus: float = Field(4.0, gt=0, description="CPU cores one sandbox may use (cgroup quota)")
    gpu: Literal["devices", "nvidia"] = Field(
        "devices", description="devices: the device nodes and driver libraries passed explicitly (no NVIDIA "
                               "toolkit needed); nvidia: a DeviceRequest the NVIDIA container toolkit serves")
    gpu_driver: str = Field("nvidia", description="the DeviceRequest driver (gpu=nvidia)")
    driver_dir: str | None = Field(None, description="the folder holding the host's libcuda.so.1 (gpu=devices); "
                                                     "default: found through the dynamic linker's cache")
    hidden_paths: TextList = Field(["/opt/kernelgrade"], description="folders of the image the sandbox must not "
                                                                     "see, on top of the service's hidden paths; "
                                                                     "comma-separated or a JSON array")
    ping_timeout_s: float = Field(10.0, gt=0, description="how long to wait for the engine to answer")
