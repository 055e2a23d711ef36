"""Settings of a hosted deployment: hosted mode, upload limits, and the password that gates the app.

Read from the environment and, where the UI passes them in, the app's secrets (Streamlit's
`st.secrets`, handed over as a plain mapping: the engine does not import Streamlit). Secrets win over
the environment. Nothing here is cached: a deployment that changes its secrets sees them on the next rerun.

    KNEEPOINT_HOSTED=1          or secret hosted = true      the seed shared read-only, imports kept per session
    KNEEPOINT_PASSWORD=...      or secret password = "..."   a password box before any page
    KNEEPOINT_MAX_UPLOAD_MB=10                               largest uploaded file, in MB
    KNEEPOINT_MAX_UPLOAD_ROWS=50000                          most data rows in one uploaded file
    KNEEPOINT_RAY_ADDRESS=HOST:PORT                          the Ray cluster the Search page's "Ray" executor joins
                                                             ('auto': the one on this machine; unset: start one here)
"""

from __future__ import annotations

import os
from typing import Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from engine.errors import KneepointError

ENV_HOSTED = "KNEEPOINT_HOSTED"
ENV_PASSWORD = "KNEEPOINT_PASSWORD"
ENV_MAX_UPLOAD_MB = "KNEEPOINT_MAX_UPLOAD_MB"
ENV_MAX_UPLOAD_ROWS = "KNEEPOINT_MAX_UPLOAD_ROWS"
ENV_RAY_ADDRESS = "KNEEPOINT_RAY_ADDRESS"
SECRET_HOSTED = "hosted"
SECRET_PASSWORD = "password"

#: the largest upload, in MB: measurement files are kilobytes, and every session's imports are held in memory
MAX_UPLOAD_MB = 10
#: the most data rows (lines under the header, or Parquet rows) in one upload
MAX_UPLOAD_ROWS = 50_000

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")

__all__ = ["HostingSettings", "UploadLimits", "SettingsError", "hosting_settings", "MAX_UPLOAD_MB", "MAX_UPLOAD_ROWS"]


class SettingsError(KneepointError):
    """A hosting setting has a value that cannot be used; the message names the setting and the value."""


class UploadLimits(BaseModel):
    """How large an uploaded file may be: megabytes and data rows."""

    model_config = ConfigDict(frozen=True)

    max_mb: int = Field(MAX_UPLOAD_MB, gt=0)
    max_rows: int = Field(MAX_UPLOAD_ROWS, gt=0)

    @property
    def max_bytes(self) -> int:
        return self.max_mb * 1024 * 1024


class HostingSettings(BaseModel):
    """What a deployment asked for. `password` is None when no gate is wanted; `password_source` says where it came
    from (for the README's troubleshooting, never shown with the value)."""

    model_config = ConfigDict(frozen=True)

    hosted: bool = False
    limits: UploadLimits = UploadLimits()
    password: Optional[SecretStr] = None
    password_source: Optional[str] = None
    ray_address: Optional[str] = None  # where the Ray executor runs; None: a Ray started on this machine


def _flag(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SettingsError(f"{name}: {value!r} is not on or off; use 1 or 0 (true/false, yes/no also work)")


def _positive_int(value: str, name: str, unit: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        number = 0
    if number <= 0:
        raise SettingsError(f"{name}: {value!r} is not a whole number of {unit} above zero")
    return number


def hosting_settings(env: Optional[Mapping[str, str]] = None,
                     secrets: Optional[Mapping[str, object]] = None) -> HostingSettings:
    """The settings from `secrets` (e.g. st.secrets as a dict) and `env` (default: os.environ).

    An empty password counts as none: it could not keep anyone out. Raises SettingsError naming the setting
    when a value cannot be used, so a typo never silently opens or limits the app."""
    env = os.environ if env is None else env
    secrets = secrets or {}
    hosted = _flag(secrets[SECRET_HOSTED], f"secret {SECRET_HOSTED!r}") if SECRET_HOSTED in secrets \
        else _flag(env.get(ENV_HOSTED, ""), ENV_HOSTED)
    limits = UploadLimits(
        max_mb=_positive_int(env[ENV_MAX_UPLOAD_MB], ENV_MAX_UPLOAD_MB, "megabytes")
        if env.get(ENV_MAX_UPLOAD_MB, "").strip() else MAX_UPLOAD_MB,
        max_rows=_positive_int(env[ENV_MAX_UPLOAD_ROWS], ENV_MAX_UPLOAD_ROWS, "rows")
        if env.get(ENV_MAX_UPLOAD_ROWS, "").strip() else MAX_UPLOAD_ROWS)
    password, source = None, None
    if SECRET_PASSWORD in secrets:
        if not isinstance(secrets[SECRET_PASSWORD], str):
            raise SettingsError(f"secret {SECRET_PASSWORD!r}: must be a string (put it in quotes in secrets.toml)")
        password, source = secrets[SECRET_PASSWORD], "secrets"
    elif env.get(ENV_PASSWORD):
        password, source = env[ENV_PASSWORD], ENV_PASSWORD
    if not password:
        password, source = None, None
    return HostingSettings(hosted=hosted, limits=limits, password=None if password is None else SecretStr(password),
                           password_source=source, ray_address=_ray_address(env.get(ENV_RAY_ADDRESS, "")))


def _ray_address(value: str) -> Optional[str]:
    """HOST:PORT or 'auto' (checked here, so a typo closes the app with the setting's name, not a failed search)."""
    text = value.strip()
    if not text:
        return None
    host, sep, port = text.rpartition(":")
    if text != "auto" and not (sep and host and port.isdigit() and 0 < int(port) < 65536):
        raise SettingsError(f"{ENV_RAY_ADDRESS}: {value!r} is not HOST:PORT of a Ray head (or 'auto')")
    return text
