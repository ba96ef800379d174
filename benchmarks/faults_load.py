"""The open-loop client of ``bench_faults.py``, in a process of its own.

The bench's pollers read Redis every 20 ms, and through a fault their clients fail, reconnect
and reload slot maps: in the client's process they would take the GIL from it and delay its
requests, so the latencies recorded would be partly the bench's own. Here the client shares
nothing with them: it sends each request at its scheduled time (monotonic clock, the same in
every process of the machine) whether or not the previous ones were answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import time
from multiprocessing.connection import Connection
from typing import Any

#: One request's outcome: (scheduled time, seconds from schedule to answer, HTTP status or 0).
Answer = tuple[float, float, int]


async def request(port: int, scheduled: float) -> Answer:
    loop = asyncio.get_running_loop()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 10)
        writer.write(b"GET /page/ HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        data = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        status = int(data.split(b" ", 2)[1])
    except (OSError, TimeoutError, ValueError, IndexError):
        status = 0
    # asyncio's loop clock is time.monotonic(): the schedule's clock.
    return scheduled, loop.time() - scheduled, status


async def open_loop(port: int, rate: float, duration: float, start: float) -> list[Answer]:
    """Requests at ``start + i / rate`` (monotonic clock), each sent on time whatever the
    others do."""
    tasks = []
    for index in range(int(rate * duration)):
        scheduled = start + index / rate
        delay = scheduled - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(request(port, scheduled)))
    return list(await asyncio.gather(*tasks))


def _serve(connection: Connection, port: int, rate: float) -> None:
    """The child: say it is ready, then run each phase it is sent, (start, duration), and send
    back its answers; ``None`` ends it."""
    connection.send("ready")
    while (phase := connection.recv()) is not None:
        start, duration = phase
        connection.send(asyncio.run(open_loop(port, rate, duration, start)))
    connection.close()


class Load:
    """The open-loop client, in a spawned process (nothing inherited from the bench's threads)."""

    def __init__(self, port: int, rate: float) -> None:
        context = multiprocessing.get_context("spawn")
        self.connection, child = context.Pipe()
        self.process: Any = context.Process(target=_serve, args=(child, port, rate), daemon=True)
        self.process.start()
        child.close()
        if self.connection.recv() != "ready":  # imports done: the schedule can start soon
            raise RuntimeError("the load process did not start")

    def start(self, start: float, duration: float) -> None:
        """Start a phase of load at ``start`` (``time.monotonic()``) for ``duration`` s."""
        self.connection.send((start, duration))

    def answers(self) -> list[Answer]:
        """The answers of the phase started last, once it is over."""
        answers: list[Answer] = self.connection.recv()
        return answers

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.send(None)
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
