"""Redis in Action listings 5.3-5.5, transcribed to Python 3 and redis-py 5+.

Used as the reference the Counter is compared with, on the same inputs and a real Redis. The only
changes: keys carry a namespace (so tests stay isolated), ``now`` is a parameter, and the daemon
loop is one pass.
"""

from __future__ import annotations

import bisect

import redis

PRECISION = [1, 5, 60, 300, 3600, 18000, 86400]
SAMPLE_COUNT = 120


def update_counter(conn: redis.Redis, ns: str, name: str, count: int = 1, now: float = 0.0) -> None:
    pipe = conn.pipeline()
    for prec in PRECISION:
        pnow = int(now / prec) * prec
        hash_ = f"{prec}:{name}"
        pipe.zadd(f"{ns}known:", {hash_: 0})
        pipe.hincrby(f"{ns}count:" + hash_, pnow, count)
    pipe.execute()


def get_counter(conn: redis.Redis, ns: str, name: str, precision: int) -> list[tuple[int, int]]:
    hash_ = f"{precision}:{name}"
    data = conn.hgetall(f"{ns}count:" + hash_)
    to_return = [(int(key), int(value)) for key, value in data.items()]
    to_return.sort()
    return to_return


def clean_counters_once(conn: redis.Redis, ns: str, now: float, passes: int = 0) -> None:
    pipe = conn.pipeline(True)
    index = 0
    while index < conn.zcard(f"{ns}known:"):
        hash_ = conn.zrange(f"{ns}known:", index, index)
        index += 1
        if not hash_:
            break
        hash_ = hash_[0].decode()
        prec = int(hash_.partition(":")[0])
        bprec = int(prec // 60) or 1
        if passes % bprec:
            continue
        hkey = f"{ns}count:" + hash_
        cutoff = now - SAMPLE_COUNT * prec
        samples = sorted(map(int, conn.hkeys(hkey)))
        remove = bisect.bisect_right(samples, cutoff)
        if remove:
            conn.hdel(hkey, *samples[:remove])
            if remove == len(samples):
                try:
                    pipe.watch(hkey)
                    if not pipe.hlen(hkey):
                        pipe.multi()
                        pipe.zrem(f"{ns}known:", hash_)
                        pipe.execute()
                        index -= 1
                    else:
                        pipe.unwatch()
                except redis.exceptions.WatchError:
                    pass


def known(conn: redis.Redis, ns: str) -> list[str]:
    return [member.decode() for member in conn.zrange(f"{ns}known:", 0, -1)]
