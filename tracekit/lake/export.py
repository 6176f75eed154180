"""``tracekit export``: a store's tables as a Parquet lake, incrementally and crash-safe.

Each table is read once to fingerprint its partitions (rows, and a sum of
row hashes over every column the table has, so columns added by a later
schema flow through); partitions whose fingerprint is the one in the lake's
manifest are left alone. The others are written by one DuckDB ``COPY`` into
a staging folder inside the lake, then each partition's single file is moved
into place with ``os.replace``: a reader sees the old file or the new one,
never half of one. The manifest is rewritten (atomically too) after each
table, so a crash at any point leaves every partition readable and costs the
next export only what it had not recorded. ``docs/lake.md`` has the layout.

Example:
    >>> report = export_lake("fleet.duckdb", "lake")
    >>> report.tables["runs"].written > 0, export_lake("fleet.duckdb", "lake").written
    (True, 0)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import duckdb

from tracekit._util.text import escape as show
from tracekit.errors import LakeError
from tracekit.lake.layout import MANIFEST, STAGING, TABLES, TableLayout, partition_path
from tracekit.store.db import connect

__all__ = ["ExportReport", "TableExport", "export_lake", "read_manifest"]

PathLike = str | os.PathLike[str]

#: The manifest's own format; a lake written by a newer one is refused.
FORMAT: Final = 1
_MAX_NAME_BYTES: Final = 255
_MEMORY_LIMIT: Final = os.environ.get("TRACEKIT_DB_MEMORY", "1GB")


@dataclass(slots=True)
class TableExport:
    """What one export did to one table (partitions and the rows written)."""

    written: int = 0
    unchanged: int = 0
    removed: int = 0
    rows: int = 0


@dataclass(slots=True)
class ExportReport:
    """What one :func:`export_lake` did, table by table."""

    lake: Path
    tables: dict[str, TableExport] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def written(self) -> int:
        """Partitions written (new or changed), all tables."""
        return sum(t.written for t in self.tables.values())

    @property
    def rows(self) -> int:
        """Rows written, all tables."""
        return sum(t.rows for t in self.tables.values())

    def summary(self) -> str:
        """One line a table, then the total."""
        lines = [
            f"{name}: {t.written} partitions written ({t.rows} rows),"
            f" {t.unchanged} unchanged, {t.removed} removed"
            for name, t in self.tables.items()
        ]
        lines.append(f"exported to {self.lake} in {self.seconds:.1f} s")
        return "\n".join(lines)


def read_manifest(lake: PathLike) -> dict[str, Any]:
    """The lake's manifest (an empty one for a new lake).

    Raises:
        LakeError: the manifest is unreadable or from a newer tracekit.
    """
    path = Path(lake) / MANIFEST
    if not path.exists():
        return {"format": FORMAT, "tables": {}}
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LakeError(f"{path}: cannot read the lake's manifest ({exc})") from None
    if manifest.get("format") != FORMAT:
        raise LakeError(
            f"{path}: lake format {manifest.get('format')!r}, this tracekit writes {FORMAT}",
            hint="Export to a new folder.",
        )
    return manifest


def _write_manifest(lake: Path, manifest: dict[str, Any]) -> None:
    manifest["exported_at"] = datetime.now(UTC).isoformat()
    tmp = lake / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, lake / MANIFEST)


@contextlib.contextmanager
def _locked(lake: Path) -> Iterator[None]:
    """One export at a time into a lake (readers need no lock: each file is swapped whole)."""
    with open(lake / "_tracekit_lake.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LakeError(f"{lake}: another export is writing this lake") from None
        yield


def _open_store(db: Path, wait: float) -> duckdb.DuckDBPyConnection:
    # The store's own connection checks the file, waits for a writer and refuses
    # an old schema; it has external access off, so the export opens its own.
    connect(db, read_only=True, wait=wait).close()
    try:
        con = duckdb.connect(
            str(db),
            read_only=True,
            config={"memory_limit": _MEMORY_LIMIT, "preserve_insertion_order": False},
        )
    except duckdb.Error as exc:
        raise LakeError(f"{db}: cannot open the store ({str(exc).splitlines()[0]})") from None
    con.execute("SET enable_progress_bar = false")
    con.execute("SET partitioned_write_max_open_files = 100000")
    return con


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    return [
        (str(name), str(kind))
        for name, kind in con.execute(
            "SELECT column_name, data_type FROM information_schema.columns"
            " WHERE table_name = ? AND table_schema = 'main' ORDER BY ordinal_position",
            [table],
        ).fetchall()
    ]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _select_list(columns: list[tuple[str, str]]) -> str:
    """Every column but the partition keys; JSON as text (every reader takes a string)."""
    out = []
    for name, kind in columns:
        if name in ("day", "service"):
            continue
        col = f"t.{_quote(name)}"
        out.append(f"CAST({col} AS VARCHAR) AS {_quote(name)}" if kind == "JSON" else col)
    return ", ".join(out)


def _fingerprints(
    con: duckdb.DuckDBPyConnection, layout: TableLayout, columns: list[tuple[str, str]]
) -> dict[str, dict[str, Any]]:
    """Each partition's key, rows and hash of every column, by its path in the lake."""
    if any(name == "key_hash" for name, _ in columns):
        # events: a record never changes once stored; its key's hash names it.
        digest = "sum(t.key_hash::HUGEINT + t.ingest_id)"
    else:
        digest = "sum(hash(" + ", ".join(f"t.{_quote(n)}" for n, _ in columns) + ")::HUGEINT)"
    rows = con.execute(
        f"""
        SELECT {layout.day} AS day, {layout.service} AS service, count(*), {digest}
        FROM {layout.name} t {layout.joins} GROUP BY ALL
        """
    ).fetchall()
    parts: dict[str, dict[str, Any]] = {}
    for day, service, n, digest_value in rows:
        key = partition_path(layout.name, day, service)
        last = key.rsplit("/", 1)[-1]
        if len(last.encode()) > _MAX_NAME_BYTES:
            raise LakeError(
                f"service '{show(str(service)[:80])}...' is too long for a folder name"
                f" ({len(last.encode())} bytes escaped; the limit is {_MAX_NAME_BYTES})",
                hint="Shorten the service name where the traces are written.",
            )
        parts[key] = {"day": day, "service": service, "rows": int(n), "hash": str(digest_value)}
    return parts


def _copy(
    con: duckdb.DuckDBPyConnection,
    layout: TableLayout,
    columns: list[tuple[str, str]],
    todo: list[dict[str, Any]],
    staging: Path,
) -> None:
    """Write the partitions ``todo`` into ``staging/pid=N/`` in one COPY (N: place in ``todo``)."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _lake_keys (pid INTEGER, day VARCHAR, service VARCHAR)"
    )
    con.executemany(
        "INSERT INTO _lake_keys VALUES (?, ?, ?)",
        [(pid, p["day"], p["service"]) for pid, p in enumerate(todo)],
    )
    target = str(staging).replace("'", "''")
    con.execute(
        f"""
        COPY (
            SELECT {_select_list(columns)}, k.pid
            FROM {layout.name} t {layout.joins}
            JOIN _lake_keys k ON k.day IS NOT DISTINCT FROM ({layout.day})
                AND k.service IS NOT DISTINCT FROM ({layout.service})
        ) TO '{target}' (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (pid),
            FILENAME_PATTERN 'data_{{i}}', OVERWRITE_OR_IGNORE)
        """
    )


def _staged_file(con: duckdb.DuckDBPyConnection, folder: Path) -> Path:
    """The one file of a staged partition (DuckDB may have flushed it in several)."""
    files = sorted(folder.glob("*.parquet"))
    if len(files) == 1:
        return files[0]
    merged = folder.with_suffix(".parquet")
    source = str(folder / "*.parquet").replace("'", "''")
    target = str(merged).replace("'", "''")
    con.execute(
        f"COPY (SELECT * FROM read_parquet('{source}')) TO '{target}'"
        " (FORMAT parquet, COMPRESSION zstd)"
    )
    return merged


def _place(lake: Path, key: str, staged: Path) -> None:
    final = lake / key
    final.mkdir(parents=True, exist_ok=True)
    os.replace(staged, final / "data_0.parquet")  # atomic: the old file or the new, never half


def _remove(lake: Path, key: str) -> None:
    folder = lake / key
    for file in folder.glob("*.parquet"):
        file.unlink()
    for empty in (folder, folder.parent):
        with contextlib.suppress(OSError):  # not empty: another partition lives there
            empty.rmdir()


def _export_table(
    con: duckdb.DuckDBPyConnection, lake: Path, layout: TableLayout, manifest: dict[str, Any]
) -> TableExport:
    columns = _columns(con, layout.name)
    done = TableExport()
    if not columns:  # an older store without this table
        return done
    before = manifest["tables"].get(layout.name, {})
    # A changed schema (a migration added a column) rewrites every partition, so
    # that all files of a table keep one schema.
    same = before.get("columns") == [list(c) for c in columns]
    known = before.get("partitions", {}) if same else {}
    parts = _fingerprints(con, layout, columns)
    keys = [key for key, p in parts.items() if known.get(key) != p]
    staging = lake / STAGING / layout.name
    if keys:
        staging.parent.mkdir(parents=True, exist_ok=True)
        _copy(con, layout, columns, [parts[k] for k in keys], staging)
    entry: dict[str, Any] = {"columns": [list(c) for c in columns], "partitions": dict(known)}
    for pid, key in enumerate(keys):
        _place(lake, key, _staged_file(con, staging / f"pid={pid}"))
        entry["partitions"][key] = parts[key]
        done.written += 1
        done.rows += parts[key]["rows"]
    for key in set(known) - set(parts):
        _remove(lake, key)
        del entry["partitions"][key]
        done.removed += 1
    done.unchanged = len(parts) - len(keys)
    manifest["tables"][layout.name] = entry
    _write_manifest(lake, manifest)
    return done


def export_lake(db: PathLike, to: PathLike, *, wait: float = 0.0) -> ExportReport:
    """Export a store's tables to a Parquet lake, writing only what changed since the last export.

    Args:
        db: the store file.
        to: the lake folder (created if missing).
        wait: seconds to wait while another process writes the store.

    Returns:
        Partitions written, unchanged and removed, by table.

    Raises:
        StoreError: no store at ``db``.
        StoreLockedError: a writer holds the store (still, after ``wait``).
        LakeError: the lake cannot be written, or another export is writing it.
    """
    started = time.perf_counter()
    lake = Path(to)
    try:
        lake.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LakeError(f"{lake}: cannot create the lake ({exc.strerror})") from None
    report = ExportReport(lake=lake)
    con = _open_store(Path(db), wait)
    try:
        with _locked(lake):
            manifest = read_manifest(lake)
            shutil.rmtree(lake / STAGING, ignore_errors=True)  # a crashed export's leftovers
            for layout in TABLES.values():
                report.tables[layout.name] = _export_table(con, lake, layout, manifest)
            shutil.rmtree(lake / STAGING, ignore_errors=True)
    except OSError as exc:
        raise LakeError(f"{lake}: cannot write the lake ({exc.strerror or exc})") from None
    except duckdb.Error as exc:
        raise LakeError(f"{lake}: export failed ({str(exc).splitlines()[0]})") from None
    finally:
        con.close()
    report.seconds = time.perf_counter() - started
    return report
