"""Threads, asyncio tasks and processes writing one JSONL file."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _sdk_helpers import agent_of_run, paired, read_jsonl

from tracekit.events import Node, RunStart
from tracekit.sdk import AgentTracer, JsonlSink, propagate_context


def _check_tree(events: list, child_parent: dict[str, str]) -> None:
    """Every enter has its exit, and each child agent's caller is as expected."""
    runs = agent_of_run(events)
    for enter, exit_ in paired(events).values():
        assert exit_ is not None, f"{enter.agent} has no exit"
        assert exit_.ok, exit_
        expected = child_parent[enter.agent.rstrip("0123456789")]
        assert runs[enter.parentRunId].rstrip("0123456789") == expected


def test_eight_threads_one_file(tmp_path: Path) -> None:
    path = tmp_path / "threads.jsonl"
    tk = AgentTracer(JsonlSink(path))
    barrier = threading.Barrier(8)

    def worker(n: int) -> None:
        barrier.wait()
        for _ in range(20):
            with tk.run(f"desk{n}"), tk.delegate("billing"):
                with tk.step("sort"):
                    pass
                with tk.delegate("refunds"):
                    pass

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tk.close()
    events = read_jsonl(path)
    assert len(events) == 8 * 20 * 7
    _check_tree(events, {"billing": "desk", "refunds": "billing"})
    for step in (e for e in events if isinstance(e, Node)):
        assert agent_of_run(events)[step.runId] == "billing"


def test_thread_pool_joins_the_callers_run(tmp_path: Path) -> None:
    path = tmp_path / "pool.jsonl"
    tk = AgentTracer(JsonlSink(path))

    def summarise(i: int) -> int:
        with tk.delegate(f"summarizer{i}"):
            return i * 2

    with tk.run("manager"), ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(propagate_context(summarise), range(16)))
    assert results == [i * 2 for i in range(16)]
    events = read_jsonl(path)
    _check_tree(events, {"summarizer": "manager"})


def test_two_hundred_asyncio_subagents(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    tk = AgentTracer(JsonlSink(path))

    async def research(i: int) -> int:
        await asyncio.sleep(0.001 * (i % 7))
        with tk.delegate(f"reader{i}"):
            await asyncio.sleep(0)
        return i

    async def main() -> list[int]:
        with tk.run("assistant"):
            with tk.step("fan_out"):
                tasks = [tk.spawn(f"researcher{i}", research(i)) for i in range(100)]
                tasks += [asyncio.create_task(_plain(tk, i)) for i in range(100, 200)]
            return list(await asyncio.gather(*tasks))

    assert asyncio.run(main()) == list(range(200))
    tk.close()
    events = read_jsonl(path)
    assert sum(isinstance(e, RunStart) for e in events) == 1
    _check_tree(events, {"researcher": "assistant", "reader": "researcher"})
    assert len(paired(events)) == 300


async def _plain(tk: AgentTracer, i: int) -> int:
    """A subagent started with plain ``asyncio.create_task``."""
    async with tk.subagent(f"researcher{i}"):
        await asyncio.sleep(0.001 * (i % 5))
        return i


_WRITER = """
import sys
from tracekit.sdk import AgentTracer, JsonlSink
tk = AgentTracer(JsonlSink(sys.argv[1]), service=sys.argv[2])
for _ in range(300):
    with tk.run("desk"), tk.delegate("billing"), tk.delegate("refunds"):
        pass
"""


def test_processes_append_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "procs.jsonl"
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"p{n}"]) for n in range(3)
    ]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    events = read_jsonl(path)
    assert len(events) == 3 * 300 * 6
    _check_tree(events, {"billing": "desk", "refunds": "billing"})
    for service in ("p0", "p1", "p2"):
        seqs = [e.seq for e in events if e.service == service]
        assert seqs == list(range(1, 1801))


def test_threads_and_asyncio_subagents_share_one_file(tmp_path: Path) -> None:
    """8 threads and 200 asyncio subagents at the same time, one JSONL file."""
    path = tmp_path / "shared.jsonl"
    tk = AgentTracer(JsonlSink(path))
    go = threading.Event()

    def worker(n: int) -> None:
        go.wait()
        for _ in range(25):
            with tk.run(f"desk{n}"), tk.delegate("billing"), tk.delegate("refunds"):
                pass

    async def fan_out() -> None:
        async def research(i: int) -> None:
            await asyncio.sleep(0.0005 * (i % 9))
            with tk.delegate(f"reader{i}"):
                await asyncio.sleep(0)

        with tk.run("assistant"):
            tasks = [tk.spawn(f"researcher{i}", research(i)) for i in range(200)]
            go.set()
            await asyncio.gather(*tasks)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    asyncio.run(fan_out())
    for t in threads:
        t.join()
    tk.close()
    events = read_jsonl(path)
    assert len(paired(events)) == 8 * 25 * 2 + 200 * 2
    _check_tree(
        events,
        {
            "billing": "desk",
            "refunds": "billing",
            "researcher": "assistant",
            "reader": "researcher",
        },
    )
    seqs = [e.seq for e in events]
    assert sorted(seqs) == list(range(1, len(events) + 1))  # one writer, no gaps or repeats
