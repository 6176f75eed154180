"""Reads never starve ingest: slow SQL runs on its own capped threads while spans are acknowledged."""

from __future__ import annotations

import json
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

from _server_helpers import post, start
from test_server_body import GOOD

#: Seconds each slow query may run (the server's most): the time the 20 ingests have to be
#: answered while the reads run. A quiet machine needs a fraction of a second; a loaded one
#: (the 8 reads burn every core) several.
QUERY_S = 10
SLOW = json.dumps(
    {"query": "SELECT count(*) FROM range(10000000000) t(a) WHERE a % 7 = 3", "timeout": QUERY_S}
).encode()
JSON = {"Content-Type": "application/json"}
Answer = tuple[int, bytes, dict[str, str]]


def _refused(queries: list[Future[Answer]], count: int) -> list[Future[Answer]]:
    """Wait until ``count`` queries are answered (those refused at once); those still running."""
    pending = set(queries)
    while len(queries) - len(pending) < count:
        done, pending = wait(pending, timeout=60, return_when=FIRST_COMPLETED)
        assert done, f"{len(queries) - len(pending)} answered in a minute"
    return [q for q in queries if q in pending]


def test_fifty_slow_queries_leave_ingest_fast(tmp_path: Path) -> None:
    server = start(tmp_path / "w.duckdb")
    try:
        # Ingest under way (its decoding process started) before the reads come.
        assert post(server.url + "/v1/traces", GOOD, JSON)[0] == 200
        with ThreadPoolExecutor(50) as pool:
            queries = [pool.submit(post, server.url + "/api/sql", SLOW, JSON) for _ in range(50)]
            # 8 read threads: the other 42 are refused at once, so 8 are running now
            running = _refused(queries, 42)
            assert len(running) == 8
            for _ in range(20):
                status, _, _ = post(server.url + "/v1/traces", GOOD, JSON)
                assert status == 200
            # Every ingest answered while the 8 slow reads still ran: none waited for a read.
            assert not any(q.done() for q in running), [q.result() for q in running if q.done()]
            answers = [q.result() for q in queries]
        statuses = sorted(status for status, _, _ in answers)
        busy = [a for a in answers if a[0] == 429]
        assert statuses.count(400) == 8, statuses  # those that ran were stopped at QUERY_S
        assert len(busy) == 42 and all(h["retry-after"] == "1" for _, _, h in busy)
        stopped = next(body for status, body, _ in answers if status == 400)
        assert f"stopped after {QUERY_S} s" in json.loads(stopped)["error"]
    finally:
        assert server.stop() == 0
