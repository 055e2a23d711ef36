"""export_design(scenario) -> DesignExport: a design's deployment files, checked, as bytes in memory; written
to a directory (atomically, never outside it) or packed into a zip for a download button."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from engine.analytic import Context
from engine.deploy.checks import check_bundle
from engine.deploy.files import bundle_objects, encode
from engine.deploy.plan import DeployPlan, ExportError, deploy_plan
from engine.io.exporters import write_atomic
from engine.scenario import Scenario

#: the timestamp of every zip member, so one design always zips to the same bytes
ZIP_DATE = (2020, 1, 1, 0, 0, 0)


class DesignExport(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    plan: DeployPlan
    files: dict[str, bytes]  # relative POSIX path -> content
    objects: dict[str, object]  # relative path -> the object the file encodes (YAML and pbtxt: a dict)


def export_design(data: dict | str | Scenario, ctx: Context, servers: int = 1) -> DesignExport:
    """The design's mig-parted, Triton and Kubernetes files, each checked (engine.deploy.checks), for `servers`
    identical servers of the scenario (engine.deploy.plan.deploy_plan); a layout that cannot be placed, or any
    file that fails its check, raises ExportError."""
    plan = deploy_plan(data, ctx, servers)
    objects = bundle_objects(plan)
    files = {path: encode(path, obj) for path, obj in objects.items()}
    check_bundle(objects, files, ctx.book.catalog.gpu(plan.sku))
    return DesignExport(plan=plan, files=files, objects=objects)


def _safe_relative(path: str) -> PurePosixPath:
    p = PurePosixPath(path)
    if p.is_absolute() or not p.parts or any(part in ("", ".", "..") for part in p.parts) or "\\" in path:
        raise ExportError(f"{path!r}: a bundle path must be relative and stay inside the export directory")
    return p


def write_export(export: DesignExport, directory: Path | str) -> list[Path]:
    """Write every file under `directory` (created if missing), each atomically; nothing outside it."""
    root = Path(directory)
    if root.exists() and not root.is_dir():
        raise ExportError(f"--to {directory}: exists and is not a directory")
    root_real = root.resolve()
    targets = []
    for path in export.files:
        target = (root / _safe_relative(path)).resolve()
        if root_real != target and root_real not in target.parents:  # a symlink inside pointing out
            raise ExportError(f"{path!r}: resolves outside the export directory {directory}")
        targets.append(target)
    written = []
    for target, data in zip(targets, export.files.values()):
        write_atomic(target, data)
        written.append(target)
    return written


def zip_bytes(export: DesignExport) -> bytes:
    """The bundle as a zip archive, built in memory (the pages' download buttons)."""
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in export.files.items():
            _safe_relative(path)
            info = zipfile.ZipInfo(path, date_time=ZIP_DATE)
            info.external_attr = (0o755 if path.endswith(".sh") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return sink.getvalue()
