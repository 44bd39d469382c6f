"""Cases of zklock's Kazoo driver (drivers/kazoo/zklock_driver.py) against stand-ins for
Kazoo's Lock and client, for real/tests/drivers/kazoo_cases.rs. Each stand-in does what
Kazoo 2.8 does on the path its case takes (kazoo/recipe/lock.py).

usage: kazoo_driver_cases.py DRIVER_PATH CASE
Prints "ok CASE"; a case that fails raises.
"""

import importlib.util
import sys
import threading

from kazoo.exceptions import CancelledError, ConnectionLoss


def load(path):
    spec = importlib.util.spec_from_file_location("zklock_driver", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Stat:
    czxid = 42


class Client:
    """Kazoo's client as the driver reads a hold's token: `exists` answers a stat, or
    raises `fail` once, or answers None (no node) when `gone`."""

    def __init__(self):
        self.fail = None
        self.gone = False

    def exists(self, _path):
        if self.fail is not None:
            e, self.fail = self.fail, None
            raise e
        return None if self.gone else Stat()


class Lock:
    """Kazoo's Lock: a cancel is a flag its acquire reads once it waits; an acquire of a
    Lock that believes it holds retries forever and reads no cancel (here it fails the
    case instead)."""

    def __init__(self):
        self.cancelled = False
        self.is_acquired = False
        self.node = "c0__lock__0000000001"
        self.released = 0

    def acquire(self, blocking=True, timeout=None):
        if self.is_acquired:
            raise AssertionError("acquire of a Lock that holds: Kazoo waits here forever")
        if self.cancelled:
            self.cancelled = False
            raise CancelledError()
        self.is_acquired = True
        return True

    def cancel(self):
        self.cancelled = True

    def release(self):
        self.is_acquired = False
        self.released += 1
        return True


def setup(driver_path):
    m = load(driver_path)
    emitted, deferred = [], []
    m.emit = lambda **fields: emitted.append(fields)
    # The acquire's thread starts only when the case says so.
    m.start = lambda target, *args: deferred.append((target, args))
    # Not started: Kazoo's client connects only in start().
    d = m.Driver("lock", "127.0.0.1:1", "/zklock/lock", 4000)
    d.client, d.lock = Client(), Lock()
    return m, d, emitted, deferred


def cancel_sent_before_its_acquire_starts(m, d, emitted, deferred):
    m.handle(d, "acquire", 1, {"op": "acquire", "id": 1, "mode": "blocking"})
    m.handle(d, "cancel", 1, {"op": "cancel", "id": 1})
    for target, args in deferred:
        target(*args)
    assert emitted == [{"event": "not_acquired", "id": 1, "reason": "cancelled"}], emitted
    assert not d.lock.is_acquired


def hold_whose_token_read_fails(m, d, emitted, deferred):
    d.client.fail = ConnectionLoss()
    d.acquire(1, "blocking", 0)
    assert emitted[-1]["event"] == "error", emitted
    assert "token could not be read" in emitted[-1]["message"], emitted
    assert d.lock.released == 1 and not d.lock.is_acquired
    # The Lock holds nothing: the next acquire takes it.
    d.acquire(2, "blocking", 0)
    assert emitted[-1] == {"event": "acquired", "id": 2, "token": 42,
                           "node": "c0__lock__0000000001"}, emitted


def grant_whose_node_is_gone(m, d, emitted, deferred):
    # The library's word stands: the checker judges a hold whose node is gone.
    d.client.gone = True
    d.acquire(1, "blocking", 0)
    assert emitted[-1] == {"event": "acquired", "id": 1, "token": -1,
                           "node": "c0__lock__0000000001"}, emitted
    assert d.lock.released == 0


def acquire_of_a_lock_that_still_holds(m, d, emitted, deferred):
    d.lock.is_acquired = True
    d.acquire(1, "blocking", 0)
    assert emitted[-1]["event"] == "error", emitted
    assert "still holds" in emitted[-1]["message"], emitted


def a_fresh_object_replaces_a_lock_that_still_holds(m, d, emitted, deferred):
    # The driver's Lock believes it still holds (an earlier release that failed): a
    # `fresh` acquire takes a new object, which acquires, and a cancel reaches the new one.
    stale = d.lock
    stale.is_acquired = True
    d.make_lock = Lock
    m.handle(d, "acquire", 1, {"op": "acquire", "id": 1, "mode": "blocking", "object": "fresh"})
    assert d.lock is not stale
    m.handle(d, "cancel", 1, {"op": "cancel", "id": 1})
    assert d.lock.cancelled and not stale.cancelled
    d.lock.cancelled = False
    target, args = deferred.pop()
    target(*args)
    assert emitted[-1] == {"event": "acquired", "id": 1, "token": 42,
                           "node": "c0__lock__0000000001"}, emitted
    # `same` keeps the object; an unknown object is refused.
    current = d.lock
    m.handle(d, "acquire", 2, {"op": "acquire", "id": 2, "mode": "try", "object": "same"})
    assert d.lock is current
    m.handle(d, "acquire", 3, {"op": "acquire", "id": 3, "mode": "try", "object": "other"})
    assert emitted[-1]["event"] == "error" and emitted[-1]["id"] == 3, emitted


def a_reset_waits_for_its_requests_and_gives_up_on_a_stuck_one(m, d, emitted, deferred):
    m.RESET_JOIN_S = 0.5
    gate = threading.Event()

    class Waiting(Lock):
        """Kazoo's blocking acquire, waiting until `gate` opens."""

        def acquire(self, blocking=True, timeout=None):
            gate.wait()
            return Lock.acquire(self, blocking, timeout)

    # An acquire that ends soon after the reset: the reset waits for its answer, which
    # comes before the reset's own.
    d.lock = Waiting()
    m.start = lambda target, *args: m_start(target, args)
    threads = []

    def m_start(target, args):
        t = threading.Thread(target=target, args=args, daemon=True)
        t.start()
        threads.append(t)
        return t

    m.handle(d, "acquire", 1, {"op": "acquire", "id": 1, "mode": "blocking"})
    threading.Timer(0.1, gate.set).start()
    assert m.reset(d), "the reset gave up on an acquire that ended"
    assert emitted[-1]["id"] == 1, emitted
    # The old session's listener reports nothing after the reset.
    before = len(emitted)
    d.on_state(m.KazooState.LOST)
    assert len(emitted) == before, emitted
    # A stuck acquire: the reset gives up, and the driver must exit.
    _, d2, _, _ = setup(sys.argv[1])
    gate.clear()
    d2.lock = Waiting()
    m.handle(d2, "acquire", 2, {"op": "acquire", "id": 2, "mode": "blocking"})
    assert not m.reset(d2), "a reset past a stuck acquire"
    gate.set()


CASES = {f.__name__: f for f in (
    cancel_sent_before_its_acquire_starts,
    hold_whose_token_read_fails,
    grant_whose_node_is_gone,
    acquire_of_a_lock_that_still_holds,
    a_fresh_object_replaces_a_lock_that_still_holds,
    a_reset_waits_for_its_requests_and_gives_up_on_a_stuck_one,
)}


def main():
    driver_path, case = sys.argv[1], sys.argv[2]
    CASES[case](*setup(driver_path))
    print("ok", case)


if __name__ == "__main__":
    main()
