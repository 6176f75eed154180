"""``tracekit export``: a store's tables as a Parquet lake, incrementally and crash-safe.

Many writers share one lake: each (a store, a ``tracekit serve``) has an id,
writes only files named by it (``<table>/day=D/service=S/<writer>.parquet``)
and keeps its own manifest (``_writers/<writer>.json``), so writers never
touch each other's files and need no common lock; readers take the union.

Each table is read once to fingerprint its partitions (rows, and a sum of
row hashes over every column the table has, so columns added by a later
schema flow through); partitions whose fingerprint is the one in the writer's
manifest are left alone. The others are written by one DuckDB ``COPY`` into
a staging folder inside the lake, then each partition's single file is moved
into place with ``os.replace``: a reader sees the old file or the new one,
never half of one. The manifest is rewritten (atomically too) after each
table, so a crash at any point leaves every partition readable and costs the
next export only what it had not recorded. ``docs/lake.md`` has the layout.

Example:
    >>> report = export_lake("fleet.duckdb", "lake", writer="laptop")
    >>> report.tables["runs"].written > 0, export_lake("fleet.duckdb", "lake", writer="laptop").written
    (True, 0)
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import duckdb

from tracekit._util.text import escape as show
from tracekit.errors import LakeError
from tracekit.lake.layout import (
    MANIFEST,
    STAGING,
    TABLES,
    WRITERS,
    TableLayout,
    partition_path,
    writer_name,
)
from tracekit.store.db import connect

__all__ = [
    "ExportReport",
    "TableExport",
    "default_writer",
    "export_lake",
    "export_store",
    "read_manifest",
    "writer_manifests",
]

PathLike = str | os.PathLike[str]

#: The manifest's own format; a lake written by a newer one is refused.
FORMAT: Final = 2
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
    writer: str = ""
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
        lines.append(f"exported to {self.lake} as writer {self.writer} in {self.seconds:.1f} s")
        return "\n".join(lines)


def default_writer(db: PathLike) -> str:
    """A writer id for a store: this host's name and the store's file name.

    Two stores of one name on one host must be given ids of their own.

    Example:
        >>> default_writer("/data/fleet.duckdb").endswith("-fleet")
        True
    """
    return writer_name(f"{socket.gethostname()}-{Path(db).stem}")


def _check_mark(lake: Path) -> None:
    """The lake's mark: a folder with ``_tracekit_lake.json`` of this format is a lake."""
    path = lake / MANIFEST
    try:
        mark = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LakeError(f"{path}: cannot read the lake's manifest ({exc})") from None
    if not isinstance(mark, dict) or mark.get("format") != FORMAT:
        found = mark.get("format") if isinstance(mark, dict) else None
        raise LakeError(
            f"{path}: lake format {found!r}, this tracekit reads and writes {FORMAT}",
            hint="Export to a new folder.",
        )


def _ensure_mark(lake: Path) -> None:
    path = lake / MANIFEST
    if not path.exists():
        tmp = lake / f".{MANIFEST}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"format": FORMAT}), encoding="utf-8")
        os.replace(tmp, path)  # writers racing here write the same bytes
    _check_mark(lake)


def read_manifest(lake: PathLike, writer: str) -> dict[str, Any]:
    """One writer's manifest in a lake (an empty one for a new writer).

    Raises:
        LakeError: the manifest is unreadable or from another lake format.
    """
    path = Path(lake) / WRITERS / f"{writer}.json"
    if not path.exists():
        return {"format": FORMAT, "writer": writer, "tables": {}}
    try:
        manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LakeError(f"{path}: cannot read the writer's manifest ({exc})") from None
    if manifest.get("format") != FORMAT:
        raise LakeError(
            f"{path}: lake format {manifest.get('format')!r}, this tracekit writes {FORMAT}"
        )
    return manifest


def writer_manifests(lake: PathLike) -> dict[str, dict[str, Any]]:
    """Every writer's manifest in a lake, by writer id.

    Raises:
        LakeError: no lake at ``lake``, or a manifest is unreadable.
    """
    root = Path(lake)
    if not (root / MANIFEST).exists():
        raise LakeError(
            f"{root}: no lake here", hint="Export one with: tracekit export --db FILE --to DIR"
        )
    _check_mark(root)
    names = sorted(p.stem for p in (root / WRITERS).glob("*.json"))
    return {name: read_manifest(root, name) for name in names}


def _write_manifest(lake: Path, manifest: dict[str, Any]) -> None:
    manifest["exported_at"] = datetime.now(UTC).isoformat()
    path = lake / WRITERS / f"{manifest['writer']}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


@contextlib.contextmanager
def _locked(lake: Path, writer: str) -> Iterator[None]:
    """One export at a time by a writer (other writers and readers need no lock)."""
    (lake / WRITERS).mkdir(exist_ok=True)
    with open(lake / WRITERS / f"{writer}.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LakeError(
                f"{lake}: writer {writer} is already exporting into this lake"
            ) from None
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


def _can_write_files(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute("SELECT current_setting('enable_external_access')").fetchone()
    return bool(row and row[0])


def _copy(
    con: duckdb.DuckDBPyConnection,
    out: duckdb.DuckDBPyConnection,
    layout: TableLayout,
    columns: list[tuple[str, str]],
    todo: list[dict[str, Any]],
    staging: Path,
) -> None:
    """Write the partitions ``todo`` into ``staging/pid=N/`` in one COPY (N: place in ``todo``).

    ``out`` writes the files: ``con`` itself, or (a store whose connection may
    not touch files, a running server's) an in-memory DuckDB fed by a stream
    of Arrow batches from ``con``.
    """
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _lake_keys (pid INTEGER, day VARCHAR, service VARCHAR)"
    )
    con.executemany(
        "INSERT INTO _lake_keys VALUES (?, ?, ?)",
        [(pid, p["day"], p["service"]) for pid, p in enumerate(todo)],
    )
    select = f"""
        SELECT {_select_list(columns)}, k.pid
        FROM {layout.name} t {layout.joins}
        JOIN _lake_keys k ON k.day IS NOT DISTINCT FROM ({layout.day})
            AND k.service IS NOT DISTINCT FROM ({layout.service})
    """
    if out is not con:
        out.register("_lake_rows", con.sql(select).to_arrow_reader())
        select = "SELECT * FROM _lake_rows"
    target = str(staging).replace("'", "''")
    try:
        out.execute(
            f"""
            COPY ({select}) TO '{target}' (FORMAT parquet, COMPRESSION zstd,
                PARTITION_BY (pid), FILENAME_PATTERN 'data_{{i}}', OVERWRITE_OR_IGNORE)
            """
        )
    finally:
        if out is not con:
            out.unregister("_lake_rows")


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


def _place(lake: Path, key: str, staged: Path, writer: str) -> None:
    final = lake / key
    final.mkdir(parents=True, exist_ok=True)
    os.replace(staged, final / f"{writer}.parquet")  # atomic: the old file or the new


def _remove(lake: Path, key: str, writer: str) -> None:
    folder = lake / key
    (folder / f"{writer}.parquet").unlink(missing_ok=True)
    for empty in (folder, folder.parent):
        with contextlib.suppress(OSError):  # not empty: another partition or writer lives there
            empty.rmdir()


def _export_table(
    con: duckdb.DuckDBPyConnection,
    out: duckdb.DuckDBPyConnection,
    lake: Path,
    layout: TableLayout,
    manifest: dict[str, Any],
) -> TableExport:
    columns = _columns(con, layout.name)
    done = TableExport()
    if not columns:  # an older store without this table
        return done
    writer = manifest["writer"]
    before = manifest["tables"].get(layout.name, {})
    # A changed schema (a migration added a column) rewrites every partition, so
    # that all files of a table keep one schema.
    same = before.get("columns") == [list(c) for c in columns]
    known = before.get("partitions", {}) if same else {}
    parts = _fingerprints(con, layout, columns)
    keys = [key for key, p in parts.items() if known.get(key) != p]
    staging = lake / STAGING / writer / layout.name
    if keys:
        staging.parent.mkdir(parents=True, exist_ok=True)
        _copy(con, out, layout, columns, [parts[k] for k in keys], staging)
    entry: dict[str, Any] = {"columns": [list(c) for c in columns], "partitions": dict(known)}
    for pid, key in enumerate(keys):
        _place(lake, key, _staged_file(out, staging / f"pid={pid}"), writer)
        entry["partitions"][key] = parts[key]
        done.written += 1
        done.rows += parts[key]["rows"]
    for key in set(known) - set(parts):
        _remove(lake, key, writer)
        del entry["partitions"][key]
        done.removed += 1
    done.unchanged = len(parts) - len(keys)
    manifest["tables"][layout.name] = entry
    _write_manifest(lake, manifest)
    return done


@contextlib.contextmanager
def _snapshot(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """One read transaction: every table exported as of one moment, while a server writes."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    finally:
        con.execute("ROLLBACK")  # it only read (and made a temporary table)


def _make_lake(lake: Path) -> None:
    try:
        lake.mkdir(parents=True, exist_ok=True)
        _ensure_mark(lake)
    except OSError as exc:
        raise LakeError(f"{lake}: cannot create the lake ({exc.strerror})") from None


def export_store(con: duckdb.DuckDBPyConnection, to: PathLike, *, writer: str) -> ExportReport:
    """Export the store behind an open connection (a running server's cursor) as ``writer``.

    The store's connection only reads; where it may not write files (a
    store's own connection never does), an in-memory DuckDB writes them.

    Raises:
        LakeError: the lake cannot be written, or this writer is already exporting.
    """
    started = time.perf_counter()
    lake = Path(to)
    _make_lake(lake)
    writer = writer_name(writer)
    report = ExportReport(lake=lake, writer=writer)
    out = con if _can_write_files(con) else duckdb.connect(config={"memory_limit": _MEMORY_LIMIT})
    staging = lake / STAGING / writer
    try:
        with _locked(lake, writer), _snapshot(con):
            manifest = read_manifest(lake, writer)
            shutil.rmtree(staging, ignore_errors=True)  # a crashed export's leftovers
            for layout in TABLES.values():
                report.tables[layout.name] = _export_table(con, out, lake, layout, manifest)
            shutil.rmtree(staging, ignore_errors=True)
            with contextlib.suppress(OSError):
                (lake / STAGING).rmdir()  # unless another writer is staging there
    except OSError as exc:
        raise LakeError(f"{lake}: cannot write the lake ({exc.strerror or exc})") from None
    except duckdb.Error as exc:
        raise LakeError(f"{lake}: export failed ({str(exc).splitlines()[0]})") from None
    finally:
        if out is not con:
            out.close()
    report.seconds = time.perf_counter() - started
    return report


def export_lake(
    db: PathLike, to: PathLike, *, wait: float = 0.0, writer: str | None = None
) -> ExportReport:
    """Export a store's tables to a Parquet lake, writing only what changed since the last export.

    Args:
        db: the store file.
        to: the lake folder (created if missing); other writers may share it.
        wait: seconds to wait while another process writes the store.
        writer: this writer's id in the lake (default: :func:`default_writer`);
            the same store should keep the same id, so that its next export
            replaces its own files.

    Returns:
        Partitions written, unchanged and removed, by table.

    Raises:
        StoreError: no store at ``db``.
        StoreLockedError: a writer holds the store (still, after ``wait``).
        LakeError: the lake cannot be written, or this writer is already exporting.
    """
    # The store is opened first: an export that cannot read it makes no folder.
    con = _open_store(Path(db), wait)
    made = not Path(to).exists()
    try:
        _make_lake(Path(to))
        return export_store(con, to, writer=writer or default_writer(db))
    except BaseException:
        if made:  # a lake this export created holds nothing anyone wrote: no stray folder
            shutil.rmtree(to, ignore_errors=True)
        raise
    finally:
        con.close()
