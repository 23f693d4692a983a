"""Settings from the environment: list settings comma-separated or as JSON, and a setting that
cannot be used stops every CLI command with one line naming its variable (no traceback)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer
from pydantic import ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from sandbox.backends.docker.options import DockerOptions
from service import cli
from service.config import REPO_ROOT, Settings
from service.config_errors import settings_error
from service.report import Report


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    # A developer's own KERNELGRADE_* must not change what these tests see; nothing is written to the checkout.
    for name in [n for n in os.environ if n.startswith("KERNELGRADE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("KERNELGRADE_DATA_DIR", str(tmp_path))


@pytest.mark.parametrize(("value", "hosts"), [
    ("127.0.0.1", ["127.0.0.1"]),
    ("127.0.0.1, hooks.example.org,", ["127.0.0.1", "hooks.example.org"]),
    ('["127.0.0.1", "hooks.example.org"]', ["127.0.0.1", "hooks.example.org"]),
    ("", []),
    ("  ", []),
])
def test_allowed_hosts_accept_comma_separated_values_or_json(monkeypatch, value, hosts):
    monkeypatch.setenv("KERNELGRADE_WEBHOOK_ALLOWED_HOSTS", value)
    assert Settings().webhook_allowed_hosts == hosts


@pytest.mark.parametrize(("value", "waits"), [("10, 60,300", [10.0, 60.0, 300.0]), ("[0.5, 2]", [0.5, 2.0])])
def test_backoff_accepts_comma_separated_values_or_json(monkeypatch, value, waits):
    monkeypatch.setenv("KERNELGRADE_WEBHOOK_BACKOFF_S", value)
    assert Settings().webhook_backoff_s == waits


@pytest.mark.parametrize(("variable", "value", "read", "expected"), [
    ("KERNELGRADE_LTI_ALLOWED_HOSTS", "127.0.0.1, lms.example.org", lambda: Settings().lti_allowed_hosts,
     ["127.0.0.1", "lms.example.org"]),
    ("KERNELGRADE_LTI_SCORE_BACKOFF_S", "0.5,2", lambda: Settings().lti_score_backoff_s, [0.5, 2.0]),
    ("KERNELGRADE_GPUS", "0, 1", lambda: Settings().gpus, [0, 1]),
    ("KERNELGRADE_DOCKER_HIDDEN_PATHS", "/opt/a, /opt/b", lambda: DockerOptions().hidden_paths, ["/opt/a", "/opt/b"]),
    ("KERNELGRADE_DOCKER_HIDDEN_PATHS", '["/opt/a"]', lambda: DockerOptions().hidden_paths, ["/opt/a"]),
])
def test_the_other_list_settings_accept_comma_separated_values(monkeypatch, variable, value, read, expected):
    monkeypatch.setenv(variable, value)
    assert read() == expected


def test_no_list_setting_insists_on_json(monkeypatch):
    """Every list-typed setting of every settings class, written `0, 1` in the environment, reads as two
    values: a list setting added later without the comma-separated parsing fails here."""
    for cls in (Settings, DockerOptions):
        prefix = cls.model_config["env_prefix"]
        lists = [name for name, field in cls.model_fields.items()
                 if getattr(field.annotation, "__origin__", None) is list]
        assert lists, cls
        for name in lists:
            variable = f"{prefix}{name.upper()}"
            monkeypatch.setenv(variable, "0, 1")
            assert len(getattr(cls(), name)) == 2, variable
            monkeypatch.delenv(variable)


def _dummy(param) -> list[str]:
    """A value for a required parameter ("1" parses as text, path or number; the settings fail before it is
    used). Duck-typed: typer carries its own copy of click."""
    return [param.opts[-1], "1"] if param.param_type_name == "option" else ["1"]


def every_command() -> dict[str, list[str]]:
    """Every leaf command of `kernelgrade` ("keys create") with its arguments, required parameters filled."""
    found: dict[str, list[str]] = {}

    def walk(command, path: list[str]) -> None:
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])
            return
        args = [*path]
        for param in command.params:
            if param.required:
                args += _dummy(param)
        found[" ".join(path)] = args + VALID_OPTIONS.get(" ".join(path), [])

    walk(typer.main.get_command(cli.app), [])
    return found


# A command that checks its own options before it reads the settings gets options it accepts.
VALID_OPTIONS = {"review decide": ["--item", "q1", "--points", "1", "--reason", "a reason long enough"]}
BAD_SETTINGS = [
    ("KERNELGRADE_WEBHOOK_ALLOWED_HOSTS", '["127.0.0.1"', "not a valid JSON array"),
    ("KERNELGRADE_WEBHOOK_ALLOWED_HOSTS", "https://hooks.example.org/x", "not a host name"),
    ("KERNELGRADE_WEBHOOK_BACKOFF_S", "10, soon", "valid number"),
    ("KERNELGRADE_WORKERS", "-1", "greater than or equal to 0"),
    ("KERNELGRADE_LIMITS", "{memory", "not valid JSON"),
    ("KERNELGRADE_LTI_ALLOWED_HOSTS", "https://lms.example.org", "not a host name"),
    ("KERNELGRADE_LTI_SCORE_BACKOFF_S", "10, soon", "valid number"),
]


def test_the_command_list_is_complete():
    assert {"grade", "serve", "worker", "exercises list", "exercises validate", "courses create",
            "courses webhook-secret", "keys create", "keys revoke", "review decide"} <= set(every_command())


@pytest.mark.parametrize(("variable", "value", "words"), BAD_SETTINGS, ids=[f"{v}={x}" for v, x, _ in BAD_SETTINGS])
def test_every_command_names_the_bad_setting_in_one_line(monkeypatch, capsys, variable, value, words):
    monkeypatch.setenv(variable, value)
    for args in every_command().values():
        monkeypatch.setattr(sys, "argv", ["kernelgrade", *args])
        with pytest.raises(SystemExit) as stopped:
            cli.main()
        out, err = capsys.readouterr()
        assert stopped.value.code == 2, (args, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, (args, err)
        assert lines[0].startswith("error: invalid setting ") and variable in lines[0] and words in lines[0], (args, err)
        assert out == "", (args, out)


def test_a_real_process_prints_one_line_and_no_traceback(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "KERNELGRADE_DATA_DIR": str(tmp_path), "KERNELGRADE_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1 10.0.0.2"}
    proc = subprocess.run([sys.executable, "-c", "from service.cli import main; main()", "courses", "list"],
                          capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: invalid setting KERNELGRADE_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1 10.0.0.2' is not a host name or address "
        "(write 127.0.0.1, hooks.example.org; no scheme)"]
    assert "Traceback" not in proc.stderr


class ProbeSettings(BaseSettings):
    """Any settings class is described with its own prefix; values of secret-looking settings are not echoed."""

    model_config = SettingsConfigDict(env_prefix="KGPROBE_")
    api_key: int = 0
    workers: int = 0


def test_secret_values_are_not_repeated_back(monkeypatch):
    monkeypatch.setenv("KGPROBE_API_KEY", "hunter2")
    monkeypatch.setenv("KGPROBE_WORKERS", "many")
    with pytest.raises(ValidationError) as refused:
        ProbeSettings()
    message = settings_error(refused.value)
    assert message is not None and "\n" not in message
    assert "KGPROBE_API_KEY: Input should be a valid integer" in message and "hunter2" not in message
    assert "KGPROBE_WORKERS: Input should be a valid integer" in message and "(got 'many')" in message


def test_other_errors_are_left_alone():
    with pytest.raises(ValidationError) as refused:
        Report.model_validate({})
    assert settings_error(refused.value) is None
    assert settings_error(RuntimeError("x")) is None
