"""The id cache owns its fork hook: a child forked while another thread holds the cache's lock
makes a new lock, whatever else (the sender) the process has imported."""

from __future__ import annotations

import os
import threading

import pytest

from django_redis_metrics.bitmaps import ids


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_child_forked_while_the_id_cache_is_locked_can_use_it() -> None:
    held, release = threading.Event(), threading.Event()

    def holder() -> None:  # another thread of the parent, inside the cache at the fork
        with ids.id_cache._lock:
            held.set()
            release.wait(30)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: the holding thread does not exist here
            code = 1
            try:
                code = 0 if ids.id_cache._lock.acquire(timeout=5) else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    finally:
        release.set()
        thread.join()
    assert os.waitstatus_to_exitcode(status) == 0, "the child found the cache's lock held"


def test_the_sender_does_not_reach_into_the_id_cache() -> None:
    from pathlib import Path

    from django_redis_metrics.sending import sender

    assert "id_cache" not in Path(sender.__file__).read_text("utf-8")
