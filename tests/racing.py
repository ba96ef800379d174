"""Writers racing a looping cleaner: real threads against the real server, errors surfaced."""

from __future__ import annotations

import threading
from collections.abc import Callable


def race(writers: list[Callable[[], None]], clean: Callable[[], None]) -> None:
    """Run ``writers`` in threads while ``clean`` runs again and again in another, until every
    writer is done; re-raise the first error any of them met."""
    stop = threading.Event()
    errors: list[BaseException] = []

    def guarded(action: Callable[[], None], loop: bool) -> None:
        try:
            action()
            while loop and not stop.is_set():
                action()
        except BaseException as exc:
            errors.append(exc)

    cleaner = threading.Thread(target=guarded, args=(clean, True))
    threads = [threading.Thread(target=guarded, args=(write, False)) for write in writers]
    cleaner.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    cleaner.join()
    if errors:
        raise errors[0]
