"""Manifests: JSON lists of shards that define a dataset without copying it.

An experience buffer is a manifest: the expert shard plus, for every round so far,
the explored shard restricted to successful episodes. Each entry records the
shard's row count and sha256; reading verifies both, so a buffer can never
silently train on data that changed after it was assembled.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from evoflow.atomic import write_json
from evoflow.errors import StoreError
from evoflow.provenance import sha256_file
from evoflow.store import selection
from evoflow.store.schema import EPISODE_SCHEMA
from evoflow.store.shards import open_shard, read_shard

MANIFEST_VERSION = 1


@dataclass(frozen=True)
class ShardRef:
    """One manifest entry: a shard and which of its episodes belong to the set."""

    path: str
    rows: int
    sha256: str
    select: str = "all"

    def __post_init__(self) -> None:
        try:
            canonical = selection.normalise(self.select)
        except ValueError as exc:
            raise ValueError(f"shard {self.path}: {exc}") from None
        object.__setattr__(self, "select", canonical)


@dataclass
class Manifest:
    """A named list of shard references (paths relative to the manifest file)."""

    shards: list[ShardRef] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def extended(self, refs: list[ShardRef], **info: Any) -> Manifest:
        """A new manifest holding this one's shards followed by ``refs``."""
        known = {(r.path, r.select) for r in self.shards}
        added = [r for r in refs if (r.path, r.select) not in known]
        return Manifest(shards=[*self.shards, *added], info={**self.info, **info})


def shard_ref(path: str | Path, select: str = "all") -> ShardRef:
    """Reference an existing shard (checked to be a valid shard) by path."""
    parquet = open_shard(path)
    return ShardRef(
        path=str(path),
        rows=parquet.metadata.num_rows,
        sha256=sha256_file(path),
        select=select,
    )


def write_manifest(path: str | Path, manifest: Manifest) -> Path:
    """Write ``manifest`` atomically; shard paths are stored relative to it."""
    path = Path(path)
    base = path.parent.resolve()
    entries = []
    for ref in manifest.shards:
        entry = asdict(ref)
        entry["path"] = os.path.relpath(Path(ref.path).resolve(), base)
        entries.append(entry)
    payload = {
        "evoflow_manifest": MANIFEST_VERSION,
        "info": manifest.info,
        "shards": entries,
    }
    return write_json(path, payload)


def read_manifest(path: str | Path, verify: bool = True) -> Manifest:
    """Read a manifest; with ``verify``, check every shard's presence and sha256.

    Returned shard paths are absolute.

    Raises
    ------
    StoreError
        naming the manifest, or the shard that is missing or changed.
    """
    path = Path(path)
    try:
        payload = json.loads(path.read_text())
    except OSError as exc:
        raise StoreError(f"{path}: cannot read manifest ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path}: manifest is not valid JSON ({exc})") from None
    if (
        not isinstance(payload, dict)
        or payload.get("evoflow_manifest") != MANIFEST_VERSION
    ):
        raise StoreError(
            f"{path}: not an evoflow manifest of version {MANIFEST_VERSION}"
        )
    base = path.parent.resolve()
    refs = []
    for i, entry in enumerate(payload.get("shards", [])):
        try:
            ref = ShardRef(**entry)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"{path}: shards[{i}] is malformed ({exc})") from None
        refs.append(ShardRef(**{**entry, "path": str((base / ref.path).resolve())}))
    manifest = Manifest(shards=refs, info=payload.get("info", {}))
    if verify:
        for ref in manifest.shards:
            _verify(ref, path)
    return manifest


def load_episodes(path: str | Path, columns: list[str] | None = None) -> pa.Table:
    """All episodes a manifest selects, as one table (hashes verified first)."""
    manifest = read_manifest(path, verify=True)
    tables = []
    for ref in manifest.shards:
        table = read_shard(ref.path, columns=columns)
        needed = selection.columns_needed(ref.select)
        if any(c not in table.column_names for c in needed):
            chosen = selection.mask(ref.select, read_shard(ref.path, columns=needed))
        else:
            chosen = selection.mask(ref.select, table)
        tables.append(table if chosen is None else table.filter(chosen))
    if not tables:
        schema = (
            EPISODE_SCHEMA
            if columns is None
            else pa.schema([EPISODE_SCHEMA.field(c) for c in columns])
        )
        return schema.empty_table()
    return pa.concat_tables(tables)


def _verify(ref: ShardRef, manifest_path: Path) -> None:
    shard = Path(ref.path)
    if not shard.is_file():
        raise StoreError(f"{manifest_path}: shard {shard} is missing")
    digest = sha256_file(shard)
    if digest != ref.sha256:
        raise StoreError(
            f"{manifest_path}: shard {shard} changed since the manifest was written "
            f"(sha256 {digest[:12]}…, expected {ref.sha256[:12]}…)"
        )


def build_buffer(
    output: str | Path,
    seed_manifest: str | Path,
    explored: str | Path,
    select: str = "success",
    previous: str | Path | None = None,
    info: dict[str, Any] | None = None,
) -> Manifest:
    """The experience buffer of a round, as a manifest (no episode is copied).

    ``previous`` (last round's buffer) is extended when given — accumulation —
    otherwise the buffer restarts from ``seed_manifest`` (the expert demos).
    ``select`` (see ``evoflow.store.selection``) keeps the successful explored
    episodes (``success``), all of them, or those with ``reward>=X``.
    """
    base = read_manifest(previous or seed_manifest)
    ref = shard_ref(explored, select=select)
    table = read_shard(explored, columns=["success", "reward"])
    successes = int(pc.sum(table["success"]).as_py() or 0)
    chosen = selection.count(ref.select, table)
    buffer = base.extended([ref], **(info or {}), added_episodes=chosen,
                           explored_episodes=table.num_rows,
                           explored_successes=successes)  # fmt: skip
    write_manifest(output, buffer)
    return buffer


def write_shards_manifest(
    output: str | Path, shards: list[str | Path], **info: Any
) -> Manifest:
    """A manifest of whole shards (e.g. every env's expert demos)."""
    manifest = Manifest([shard_ref(s) for s in shards], info=info)
    write_manifest(output, manifest)
    return manifest


def merge_manifests(
    output: str | Path, manifests: list[str | Path], **info: Any
) -> Manifest:
    """One manifest holding every shard of ``manifests`` once (verified first)."""
    merged = Manifest(info=info)
    for path in manifests:
        merged = merged.extended(read_manifest(path, verify=True).shards)
    write_manifest(output, merged)
    return merged
