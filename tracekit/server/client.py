"""Reading a store that ``tracekit serve`` holds, through its API.

DuckDB lets one process write a file; while a server owns the store, the
CLI's read commands ask the server instead: found from ``--server URL``, or
from the sidecar ``<db>.server.json`` the server writes while it runs. A
:class:`ServerClient` answers with the same types as a
:class:`~tracekit.store.Store` (DataFrames from Arrow, records for trees),
so the CLI prints the same output either way.

Example:
    >>> server_for(Path("nowhere.duckdb")) is None
    True
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from tracekit.errors import RunNotFoundError, StoreError, TracekitError

if TYPE_CHECKING:
    import pandas as pd

    from tracekit.events import Event
    from tracekit.store.cause import RootCause
    from tracekit.store.find import FindResult

__all__ = ["TOKEN_ENV", "ServerClient", "ServerError", "server_for"]

#: The environment variable a client reads its bearer token from.
TOKEN_ENV: Final = "TRACEKIT_TOKEN"
_ARROW: Final = "application/vnd.apache.arrow.stream"
_TIMEOUT: Final = 60.0
_PROBE: Final = 3.0


class ServerError(TracekitError):
    """The server could not be reached, or refused the request."""


def server_for(db: Path) -> str | None:
    """The URL of the server that holds ``db`` now, from its sidecar; None if there is none.

    A sidecar is trusted only when the server it names answers on its port as
    tracekit serving this store: one left by a server that died, whose pid or
    port something else has taken since, is ignored.
    """
    from tracekit.server.config import sidecar_path

    try:
        data = json.loads(sidecar_path(db).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("url"), str):
        return None
    pid = data.get("pid")
    if isinstance(pid, int) and not _alive(pid):
        return None
    url = str(data["url"])
    return url if _serves(url, db) else None


def _serves(url: str, db: Path) -> bool:
    """Whether ``url`` answers ``/healthz`` as tracekit serving ``db``."""
    from tracekit.server.config import store_id

    try:
        with urllib.request.urlopen(url.rstrip("/") + "/healthz", timeout=_PROBE) as answer:
            data = json.loads(answer.read(4096))
    except urllib.error.HTTPError as exc:  # 503: serving, the store refusing writes
        try:
            data = json.loads(exc.read(4096))
        except ValueError:
            return False
    except (OSError, ValueError):
        return False
    return (
        isinstance(data, dict)
        and data.get("service") == "tracekit"
        and data.get("store_id") == store_id(db)
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ServerClient:
    """The read API of a running ``tracekit serve``.

    Args:
        url: where it listens, ``http://127.0.0.1:4318``.
        token: its bearer token, if it asks for one (default ``$TRACEKIT_TOKEN``).
    """

    def __init__(self, url: str, *, token: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get(TOKEN_ENV)

    def __repr__(self) -> str:
        return f"ServerClient({self.url!r})"

    def runs(
        self,
        *,
        status: str | None = None,
        service: str | None = None,
        agent: str | None = None,
        since: str | None = None,
        limit: int | None = None,
        session: str | None = None,
    ) -> pd.DataFrame:
        """As :meth:`Store.runs <tracekit.store.Store.runs>`."""
        filters: dict[str, Any] = {"status": status, "service": service, "agent": agent}
        filters.update(since=since, limit=limit, session=session)
        return _frame(self._get("/api/runs", filters, accept=_ARROW))

    def rejects(self, limit: int | None = None) -> pd.DataFrame:
        """As :meth:`Store.rejects <tracekit.store.Store.rejects>`."""
        return _frame(self._get("/api/rejects", {"limit": limit}, accept=_ARROW))

    def session(self, session_id: str) -> pd.DataFrame:
        """As :meth:`Store.session <tracekit.store.Store.session>`."""
        return _frame(self._get(f"/api/sessions/{_segment(session_id)}", {}, accept=_ARROW))

    def find(self, query: str, *, limit: int | None = None) -> FindResult:
        """As :meth:`Store.find <tracekit.store.Store.find>`."""
        from tracekit.store.find import FindResult

        params: dict[str, Any] = {"q": query, "limit": limit}
        paths, totals = self._table("/api/find", {**params, "part": "paths"})
        runs, _ = self._table("/api/find", {**params, "part": "runs"})
        return FindResult(
            totals["query"], paths, runs, int(totals["total_paths"]), int(totals["total_runs"])
        )

    def against_fleet(self, run_id: str, *, rare_below: float, fmt: str) -> str:
        """``tracekit diff RUN --against-fleet``, rendered by the server (text or json)."""
        params = {"rare": rare_below, "format": fmt}
        return self._get(f"/api/runs/{_segment(run_id)}/against-fleet", params).decode("utf-8")

    def snapshot(self) -> Path:
        """Ask the server for a consistent copy of its store; the copy's path (same machine)."""
        data = json.loads(self._send("POST", "/api/snapshot", body=b"{}"))
        return Path(data["path"])

    def sql(self, query: str) -> pd.DataFrame:
        """As :meth:`Store.sql <tracekit.store.Store.sql>`, within the server's row and time limits."""
        body = json.dumps({"query": query}).encode()
        return _frame(self._send("POST", "/api/sql", body=body, accept=_ARROW))

    def events(self, run_id: str) -> list[Event]:
        """As :meth:`Store.events <tracekit.store.Store.events>`: the records of the run's tree."""
        from tracekit.events import decode_event

        data = self._get(f"/api/runs/{_segment(run_id)}/records", {})
        return [decode_event(line) for line in data.splitlines() if line]

    def root_cause(self, run_id: str) -> RootCause | None:
        """As :meth:`Store.root_cause <tracekit.store.Store.root_cause>`."""
        from tracekit.store.cause import RootCause

        data = json.loads(self._get(f"/api/runs/{_segment(run_id)}/cause", {}))
        return None if data is None else RootCause(**data)

    def fleet(self, *, fmt: str, width: int, color: bool, **filters: Any) -> str:
        """The fleet report, rendered by the server as ``tracekit fleet`` renders it."""
        params = {**filters, "format": "text" if fmt == "table" else "json"}
        params.update(width=width, color=int(color))
        return self._get("/api/fleet", params).decode("utf-8")

    def dashboard(self, **filters: Any) -> str:
        """The dashboard page, built by the server."""
        return self._get("/api/dashboard", filters).decode("utf-8")

    def _table(self, path: str, params: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
        """A table and the JSON values the server sent beside it (in headers)."""
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        data, headers = self._exchange("GET", f"{path}?{query}", None, _ARROW)
        extra: dict[str, Any] = {}
        for name in ("query", "total_paths", "total_runs"):
            if name in headers:
                extra[name] = json.loads(headers[name])
        return _frame(data), extra

    def _get(self, path: str, params: dict[str, Any], *, accept: str = "*/*") -> bytes:
        query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
        return self._send("GET", f"{path}?{query}" if query else path, accept=accept)

    def _send(
        self, method: str, path: str, *, body: bytes | None = None, accept: str = "*/*"
    ) -> bytes:
        return self._exchange(method, path, body, accept)[0]

    def _exchange(
        self, method: str, path: str, body: bytes | None, accept: str
    ) -> tuple[bytes, dict[str, str]]:
        request = urllib.request.Request(self.url + path, data=body, method=method)
        request.add_header("Accept", accept)
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if self.token:
            request.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT) as answer:
                data: bytes = answer.read()
                return data, {k.lower(): v for k, v in answer.headers.items()}
        except urllib.error.HTTPError as exc:
            raise _refused(exc, self.url) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServerError(
                f"{self.url}: cannot reach the server ({reason})",
                hint="Is `tracekit serve` running there? Check --server or the store's .server.json.",
            ) from None


def _segment(run_id: str) -> str:
    return urllib.parse.quote(run_id, safe="")


def _refused(exc: urllib.error.HTTPError, url: str) -> TracekitError:
    try:
        data = json.loads(exc.read() or b"{}")
    except ValueError:
        data = {}
    message = data.get("error") if isinstance(data, dict) else None
    hint = data.get("hint") if isinstance(data, dict) else None
    if exc.code == 404 and message:
        run_id = str(data.get("run_id", ""))
        return RunNotFoundError(message, run_id=run_id, source=url, hint=hint or "")
    if exc.code == 401:
        return ServerError(
            f"{url}: the server wants a token", hint=f"Set {TOKEN_ENV} to the server's --token."
        )
    if message:
        return StoreError(message, hint=hint or "")
    return ServerError(f"{url}: the server answered {exc.code} {exc.reason}")


def _frame(data: bytes) -> pd.DataFrame:
    import pyarrow as pa

    with pa.ipc.open_stream(data) as reader:
        frame: pd.DataFrame = reader.read_pandas()
    return frame
