"""A fan-out to background subagents: three researchers, one too slow.

The coordinator's ``fan_out`` step spawns three subagents as asyncio tasks and
ends at once; the coordinator goes on working while they run. The subagents
stay children of the coordinator's run after the step is over. The one that
misses the deadline is cancelled and shows as ``cancelled``.

    python examples/fanout_subagents.py "Compare three anvils"
    tracekit tree fanout_subagents.jsonl
"""

from __future__ import annotations

import asyncio

from _standin import parser, wrote

from tracekit import AgentTracer, JsonlSink

TOPICS = {"prices": 0.01, "reviews": 0.02, "stock": 5.0}  # seconds each takes


async def researcher(tk: AgentTracer, topic: str, seconds: float) -> str:
    with tk.step("search"):
        await asyncio.sleep(seconds)
    with tk.step("report"):
        return f"{topic}: found"


async def coordinator(tk: AgentTracer, question: str) -> list[str]:
    with tk.run("coordinator"):
        with tk.step("fan_out"):
            tasks = [
                tk.spawn(topic, researcher(tk, topic, seconds)) for topic, seconds in TOPICS.items()
            ]
        with tk.step("outline"):  # the coordinator keeps working meanwhile
            await asyncio.sleep(0.005)
        done, late = await asyncio.wait(tasks, timeout=0.5)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        with tk.step("compare"):
            return sorted(t.result() for t in done)


def main() -> None:
    opts = parser(
        __doc__.splitlines()[0], "fanout_subagents.jsonl", "Compare three anvils"
    ).parse_args()
    with AgentTracer(JsonlSink(opts.out)) as tk:
        print(asyncio.run(coordinator(tk, opts.question)))
    wrote(opts.out)


if __name__ == "__main__":
    main()
