"""zklock's driver for Kazoo's locks: speaks zklock's lock-under-test protocol (version 3,
docs/drivers.md) on stdin/stdout, one JSON object a line.

usage: zklock_driver.py KIND CONNECT LOCK_PATH SESSION_TIMEOUT_MS
KIND: lock | read | write | semaphore (Lock, ReadLock, WriteLock, Semaphore of one lease),
or lock-interop: Lock counting the Curator-style `-lock-` nodes of other libraries as
contenders too (Kazoo's extra_lock_patterns), for zklock's mixed runs,
or election: Election, each hold a term of leadership (see ElectionAsLock)

zklock starts it, sends acquire / release / cancel / close, and reads what it reports.
Each request runs on a thread of its own, so that a cancel reaches a blocking acquire.
Anything the driver cannot make sense of it reports as an error and goes on. A reset
closes the session and waits for an open, which starts the next one in the same process
(zklock keeps processes between a search's runs).
"""

import json
import sys
import threading
import time

import kazoo
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import CancelledError, LockTimeout
from kazoo.recipe.election import Election
from kazoo.recipe.lock import Lock, ReadLock, Semaphore, WriteLock

PROTOCOL = 3
LINE_BYTES_MAX = 65536
# How long a reset waits for the old session's requests to end; past it the driver exits.
RESET_JOIN_S = 3.0

_out = threading.Lock()


def emit(**fields):
    line = json.dumps(fields, separators=(",", ":"))
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Driver:
    def __init__(self, kind, connect, path, session_timeout_ms):
        self.kind = kind
        self.path = path
        self.client = KazooClient(hosts=connect, timeout=session_timeout_ms / 1000.0)
        self.state = threading.Lock()
        # The acquire whose hold is current (its id), and whether its loss was reported.
        self.holding = None
        self.lost_sent = False
        self.acquiring = None
        # Set by a reset: the old session's listener and requests report nothing more.
        self.closed = False
        self.threads = []
        self.client.add_listener(self.on_state)
        self.lock = self.make_lock()

    def make_lock(self):
        """A new lock object of the driver's kind, on its client."""
        kind, path = self.kind, self.path
        if kind == "lock":
            return Lock(self.client, path, identifier="zklock-driver")
        if kind == "lock-interop":
            return Lock(self.client, path, identifier="zklock-driver",
                        extra_lock_patterns=["-lock-"])
        if kind == "read":
            return ReadLock(self.client, path, identifier="zklock-driver")
        if kind == "write":
            return WriteLock(self.client, path, identifier="zklock-driver")
        if kind == "semaphore":
            return Semaphore(self.client, path, identifier="zklock-driver", max_leases=1)
        if kind == "election":
            return ElectionAsLock(Election(self.client, path, "zklock-driver"))
        raise ValueError("unknown kind %r" % kind)

    def session_id(self):
        cid = self.client.client_id
        return cid[0] if cid else 0

    def on_state(self, state):
        # Kazoo calls listeners on its own thread: report, never block.
        if self.closed:
            return
        if state == KazooState.CONNECTED:
            emit(event="session", state="connected", session_id=self.session_id())
            return
        name = "disconnected" if state == KazooState.SUSPENDED else "expired"
        emit(event="session", state=name, session_id=self.session_id())
        with self.state:
            hold, sent = self.holding, self.lost_sent
            if hold is not None and not sent:
                self.lost_sent = True
        if hold is not None and not sent:
            emit(event="lost", id=hold, reason="kazoo state " + str(state))

    def hold_of(self):
        """The token and node of the hold just taken: -1 when the node is gone (a grant
        the checker judges); raises when the node cannot be read."""
        if self.kind == "semaphore":
            node = self.lock.create_path
        else:
            node = self.path + "/" + self.lock.node
        stat = self.client.exists(node)
        token = stat.czxid if stat else -1
        return token, node.rsplit("/", 1)[1]

    def acquire(self, rid, mode, timeout_ms):
        try:
            if self.lock.is_acquired:
                # Kazoo's blocking acquire of a Lock that believes it holds waits forever,
                # deaf to a cancel: say so rather than hang.
                emit(event="error", id=rid, message="Kazoo's %s still holds an earlier "
                     "acquire's lock" % type(self.lock).__name__)
                return
            if mode == "blocking":
                got = self.lock.acquire()
            elif mode == "try":
                got = self.lock.acquire(blocking=False)
            else:
                try:
                    got = self.lock.acquire(timeout=timeout_ms / 1000.0)
                except LockTimeout:
                    got = False
            if not got:
                emit(event="not_acquired", id=rid, reason="timeout" if mode == "timed" else "held")
                return
            try:
                token, node = self.hold_of()
            except Exception as e:
                # Held, but without a token: an acquired report carries one, so the hold
                # is given back and the acquire reported as failed.
                self.give_back()
                emit(event="error", id=rid, message="acquired, but its token could not be "
                     "read (%s: %s); released" % (type(e).__name__, e))
                return
            with self.state:
                self.holding, self.lost_sent = rid, False
            emit(event="acquired", id=rid, token=token, node=node)
        except CancelledError:
            emit(event="not_acquired", id=rid, reason="cancelled")
        except Exception as e:  # the library's failure, reported as such
            emit(event="error", id=rid, message="%s: %s" % (type(e).__name__, e))
        finally:
            with self.state:
                if self.acquiring == rid:
                    self.acquiring = None

    def give_back(self):
        try:
            self.lock.release()
        except Exception:
            pass  # the library keeps what it keeps; a later acquire says so

    def release(self, rid):
        try:
            with self.state:
                self.holding = None
            self.lock.release()
            emit(event="released", id=rid)
        except Exception as e:
            emit(event="error", id=rid, message="%s: %s" % (type(e).__name__, e))

    def cancel(self, rid):
        with self.state:
            pending = self.acquiring == rid
        if pending:
            self.lock.cancel()


class ElectionAsLock:
    """Kazoo's Election, driven as a lock: an acquire contends (Election.run on a thread
    of its own) until its leadership function is called, and the term lasts until the
    release, which returns from that function. Election has neither a try nor a
    timeout: a timed acquire cancels its contention at its deadline (Election.cancel,
    which does not end a term already begun), and a try is a timed acquire of no time.
    Kazoo's own Lock does the work (Election.run is `with self.lock: func()`), so the
    attributes the driver reads of a lock are its lock's."""

    def __init__(self, election):
        self.election = election
        self.term = None

    @property
    def is_acquired(self):
        return self.election.lock.is_acquired

    @property
    def node(self):
        return self.election.lock.node

    @property
    def cancelled(self):
        return self.election.lock.cancelled

    @cancelled.setter
    def cancelled(self, value):
        self.election.lock.cancelled = value

    def cancel(self):
        self.election.cancel()

    def acquire(self, blocking=True, timeout=None):
        term = {"led": threading.Event(), "go": threading.Event(),
                "done": threading.Event(), "error": None}

        def lead():
            term["led"].set()
            term["go"].wait()

        def contend():
            try:
                self.election.run(lead)
            except Exception as e:  # the library's failure, for the acquire or release
                term["error"] = e
            finally:
                term["done"].set()
                term["led"].set()

        start(contend)
        wait_s = None if blocking and timeout is None else (timeout or 0.0)
        if not term["led"].wait(wait_s):
            self.election.cancel()
            term["led"].wait()
        if term["done"].is_set() and term["error"] is not None:
            raise term["error"]
        if term["done"].is_set():
            # Election.run swallows a cancel: it ended without leading.
            if blocking and timeout is None:
                raise CancelledError()
            return False
        self.term = term
        return True

    def release(self):
        term, self.term = self.term, None
        if term is None:
            return
        term["go"].set()
        term["done"].wait()
        if term["error"] is not None:
            raise term["error"]

    def abandon(self):
        """Ends a term without waiting (a reset: its session is closed)."""
        if self.term is not None:
            self.term["go"].set()


def start(target, *args):
    """Runs target(*args) on a thread of its own (the driver's tests defer it); the thread
    is returned, for a reset to wait on."""
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def run(driver, target, *args):
    """start(), with the thread kept on the driver's list of its requests."""
    t = start(target, *args)
    if t is not None:
        driver.threads = [x for x in driver.threads if x.is_alive()] + [t]


def handle(driver, op, rid, req):
    """Acts on one request; False for close."""
    if op == "acquire":
        try:
            mode, timeout_ms = req.get("mode", "blocking"), int(req.get("timeout_ms", 0))
        except (ValueError, TypeError) as e:
            emit(event="error", id=rid, message="bad acquire: %s" % e)
            return True
        obj = req.get("object", "same")
        if obj not in ("same", "fresh"):
            emit(event="error", id=rid, message="bad acquire: object %r" % (obj,))
            return True
        with driver.state:
            if obj == "fresh":
                # A new lock object for this acquire and the next ones, made here so that a
                # cancel read next reaches it; the old one is dropped with whatever it left
                # behind (zklock settles an acquire before it sends the next).
                driver.lock = driver.make_lock()
            driver.acquiring = rid
            # Here, not on the acquire's thread, so that a cancel read next is kept even
            # if that thread has not started yet. Kazoo would keep a cancel that came
            # after its acquire ended for the next one; zklock's cancel is for one
            # acquire only.
            driver.lock.cancelled = False
        run(driver, driver.acquire, rid, mode, timeout_ms)
    elif op == "release":
        run(driver, driver.release, rid)
    elif op == "cancel":
        driver.cancel(rid)
    elif op == "close":
        return False
    else:
        emit(event="error", id=rid, message="unknown op %r" % op)
    return True


def main():
    if len(sys.argv) != 5:
        sys.stderr.write(__doc__)
        return 2
    kind, connect, path, timeout_ms = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    driver = open_session(kind, connect, path, timeout_ms)
    while True:
        line = sys.stdin.readline(LINE_BYTES_MAX + 1)
        if not line:
            break
        if len(line) > LINE_BYTES_MAX:
            emit(event="error", id=None, message="request line longer than %d bytes" % LINE_BYTES_MAX)
            # Skip the rest of the overlong line.
            while line and not line.endswith("\n"):
                line = sys.stdin.readline(LINE_BYTES_MAX + 1)
            continue
        try:
            req = json.loads(line)
            op, rid = req["op"], req.get("id")
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            emit(event="error", id=None, message="bad request %r: %s" % (line[:200], e))
            continue
        if op == "reset":
            if driver is not None:
                if not reset(driver):
                    return 0
                driver = None
            emit(event="reset")
            continue
        if op == "open":
            if driver is not None:
                emit(event="error", id=None, message="open without a reset before it")
                continue
            try:
                kind, connect, path = str(req["kind"]), str(req["connect"]), str(req["lock_path"])
                timeout_ms = int(req["session_timeout_ms"])
            except (ValueError, KeyError, TypeError) as e:
                emit(event="error", id=None, message="bad open: %s" % e)
                continue
            driver = open_session(kind, connect, path, timeout_ms)
            continue
        if driver is None:
            emit(event="error", id=rid, message="no session: %s after a reset, before an open" % op)
            continue
        if not handle(driver, op, rid, req):
            break
    if driver is not None:
        close(driver)
    return 0


def open_session(kind, connect, path, timeout_ms):
    """A driver with its session connected, its hello sent."""
    driver = Driver(kind, connect, path, timeout_ms)
    driver.client.start(timeout=max(10.0, timeout_ms / 1000.0))
    emit(event="hello", protocol=PROTOCOL, library="kazoo", version=kazoo_version(),
         lock=type(driver.lock).__name__, session_id=driver.session_id())
    return driver


def close(driver):
    try:
        driver.client.stop()
        driver.client.close()
    except Exception:
        pass


def reset(driver):
    """Closes the session and waits for its requests to end, so that nothing of it is
    reported after the reset's answer; False when one is stuck (the process must go)."""
    driver.closed = True
    abandon = getattr(driver.lock, "abandon", None)
    if abandon is not None:
        abandon()
    close(driver)
    deadline = time.monotonic() + RESET_JOIN_S
    for t in driver.threads:
        t.join(max(0.0, deadline - time.monotonic()))
        if t.is_alive():
            return False
    return True


def kazoo_version():
    try:
        from importlib.metadata import version
        return version("kazoo")
    except Exception:
        return getattr(kazoo, "__version__", "unknown")


if __name__ == "__main__":
    sys.exit(main())
