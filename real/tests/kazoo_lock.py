"""Kazoo's Lock contending on a lock path, for zklock's interop test (real/tests/interop.rs).

usage: kazoo_lock.py HOSTS LOCK_PATH ITERATIONS HOLD_MS

Prints one line per event, flushed, with CLOCK_MONOTONIC seconds (time.monotonic()), the
clock Rust's Instant reads on Linux:
    READY <t>                  connected
    INV <t>                    about to acquire
    ACQ <t> <node> <czxid>     Kazoo's Lock believes it holds, on node <node>
    REL <t>                    about to release (the hold ends here)
    RELEASED <t>               released
    DONE <t>
Kazoo only counts nodes matching its own "__lock__" marker as contenders unless told
otherwise, so it is given zklock's "-lock-" marker as an extra pattern: without it, Kazoo
would not wait for zklock's nodes.
"""

import sys
import time

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock


def emit(*fields):
    print(" ".join(str(f) for f in fields), flush=True)


def main():
    hosts, path, iterations, hold_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=10.0)
    try:
        lock = Lock(client, path, identifier="kazoo", extra_lock_patterns=["-lock-"])
        emit("READY", time.monotonic())
        for _ in range(iterations):
            emit("INV", time.monotonic())
            lock.acquire()
            emit("ACQ", time.monotonic(), lock.node, client.exists(path + "/" + lock.node).czxid)
            time.sleep(hold_ms / 1000.0)
            emit("REL", time.monotonic())
            lock.release()
            emit("RELEASED", time.monotonic())
        emit("DONE", time.monotonic())
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    main()
