"""One Kazoo Lock contender for `zklock bench` (zklock_bench::cells::kazoo_cell).

usage: kazoo_bench.py HOSTS LOCK_PATH IDENTIFIER MAX_ACQUISITIONS SESSION_TIMEOUT_S

`zklock bench` starts one such process per contending client, each with its own
KazooClient (its own session) and its own kazoo.recipe.lock.Lock on LOCK_PATH, reused for
every acquisition as Kazoo's users do (`with lock:` in a loop).

Protocol, one line each, times in CLOCK_MONOTONIC seconds (time.monotonic(), the clock
Rust's Instant reads on Linux):
    stdout  READY <t>              connected, lock object made
    stdin   GO <start> <end>       wait until <start>, then acquire -> release (no hold)
                                   in a tight loop while the clock is before <end> and
                                   fewer than MAX_ACQUISITIONS holds were made
    stdout  H <acquired> <release> one per hold: when acquire() returned, and when
                                   release() was invoked; printed after the loop, so
                                   printing does not slow the loop down
    stdout  DONE <holds> <t>
On any error the traceback goes to stderr and the exit status is non-zero.
"""

import sys
import time

from kazoo.client import KazooClient
from kazoo.recipe.lock import Lock


def main():
    hosts, path, identifier = sys.argv[1], sys.argv[2], sys.argv[3]
    max_acquisitions, session_s = int(sys.argv[4]), float(sys.argv[5])
    client = KazooClient(hosts=hosts, timeout=session_s)
    client.start(timeout=30.0)
    try:
        client.ensure_path(path)
        lock = Lock(client, path, identifier=identifier)
        print("READY", repr(time.monotonic()), flush=True)
        go = sys.stdin.readline().split()
        if len(go) != 3 or go[0] != "GO":
            sys.exit("kazoo_bench.py: expected 'GO <start> <end>', got %r" % (go,))
        start, end = float(go[1]), float(go[2])
        now = time.monotonic()
        if now < start:
            time.sleep(start - now)
        mono = time.monotonic
        holds = []
        while len(holds) < max_acquisitions and mono() < end:
            lock.acquire()
            acquired = mono()
            released = mono()
            lock.release()
            holds.append((acquired, released))
        out = ["H %r %r" % hold for hold in holds]
        out.append("DONE %d %r" % (len(holds), time.monotonic()))
        print("\n".join(out), flush=True)
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    main()
