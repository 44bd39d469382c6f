#!/usr/bin/env python3
"""__TITLE__

A reproduction exported by zklock (https://github.com/zklock/zklock is not needed to run
it): it needs Python 3 and Kazoo alone, and a ZooKeeper server, which it starts itself
(Java and the ZooKeeper jars, Debian's /usr/share/java/zookeeper.jar by default, or
ZK_JAR) unless one is given (ZK_HOSTS=host:port, or --hosts).

It runs the script below: each client is a KazooClient of its own, connected through a
small TCP proxy this file carries, which injects exactly the finding's faults at the
requests it names. It exits 1 with an AssertionError that states what the lock did wrong,
or 0 when the lock behaved.

usage: python3 repro.py [--no-fault] [--hosts HOST:PORT]
  --no-fault  run the same script with no fault injected (the control: it must pass)
  --hosts     a ZooKeeper server to use instead of starting one (also ZK_HOSTS)
"""

import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import kazoo.version
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import CancelledError, KazooException, LockTimeout
from kazoo.recipe.lock import Lock, ReadLock, Semaphore, WriteLock

# The finding: the script's clients and attempts, the faults, and what is checked.
SCRIPT = json.loads(r"""__SCRIPT__""")

# Bounds that hold only when something hangs: a server start, a connect, the run.
SERVER_START_S = 60.0
CONNECT_S = 30.0
RUN_DEADLINE_S = 300.0
# What a timed acquire may take past its timeout: its cleanup's grace, as zklock's
# checker allows it (timed_acquire_in_time).
TIMED_GRACE_S = 1.0

OP_NAMES = {1: "create", 2: "delete", 3: "exists", 4: "get-data", 5: "set-data",
            8: "get-children", 12: "get-children", 15: "create", 19: "create",
            21: "create"}
# The requests whose body starts with a path, after xid and type.
PATH_OPS = set(OP_NAMES)


def log(msg):
    sys.stderr.write("[%7.3f] %s\n" % (time.monotonic() - T0, msg))
    sys.stderr.flush()


T0 = time.monotonic()


# --- a ZooKeeper server in a temp dir, on a free loopback port -------------------------

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def four_letter(port, word):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(word.encode())
            return s.recv(64).decode(errors="replace")
    except OSError:
        return ""


class Server:
    """A standalone ZooKeeper server, stopped (and its dir removed) by stop()."""

    def __init__(self):
        java = os.environ.get("ZK_JAVA") or "/usr/bin/java"
        jar = os.environ.get("ZK_JAR") or "/usr/share/java/zookeeper.jar"
        for what, path in (("Java", java), ("the ZooKeeper jar", jar)):
            if not os.path.isfile(path):
                sys.exit("cannot start a server: %s not found at %s (set ZK_JAVA / ZK_JAR, "
                         "or give a server with ZK_HOSTS)" % (what, path))
        self.dir = tempfile.mkdtemp(prefix="zk-repro-")
        self.port = free_port()
        data = os.path.join(self.dir, "data")
        os.makedirs(data)
        cfg = os.path.join(self.dir, "zoo.cfg")
        with open(cfg, "w") as f:
            f.write("tickTime=200\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\n"
                    "4lw.commands.whitelist=*\nadmin.enableServer=false\n"
                    "minSessionTimeout=400\nmaxSessionTimeout=60000\nforceSync=no\n"
                    % (data, self.port))
        cp = [jar]
        logger = os.path.join(os.path.dirname(jar), "slf4j-simple.jar")
        if os.path.isfile(logger):
            cp.append(logger)
        if os.path.isdir("/etc/zookeeper/conf"):
            cp.insert(0, "/etc/zookeeper/conf")
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen(
            [java, "-Xmx256m", "-XX:+UseSerialGC", "-Dzookeeper.log.dir=" + self.dir,
             "-cp", ":".join(cp), "org.apache.zookeeper.server.ZooKeeperServerMain", cfg],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.dir)
        deadline = time.monotonic() + SERVER_START_S
        while "Zookeeper version" not in four_letter(self.port, "srvr"):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit("the ZooKeeper server did not start (its log: %s)" % cfg)
            time.sleep(0.1)
        self.hosts = "127.0.0.1:%d" % self.port

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- the fault-injecting proxy: ZooKeeper's framing, a 4-byte big-endian length --------

def read_frame(sock):
    head = recv_exactly(sock, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">i", head)
    body = recv_exactly(sock, n) if n > 0 else b""
    return None if body is None else head + body


def recv_exactly(sock, n):
    buf = b""
    while len(buf) < n:
        try:
            chunk = sock.recv(n - len(buf))
        except OSError:
            return None
        if not chunk:
            return None
        buf += chunk
    return buf


def request_of(frame):
    """(xid, op, path or None) of a request frame after the ConnectRequest."""
    xid, op = struct.unpack(">ii", frame[4:12])
    path = None
    if op in PATH_OPS and len(frame) >= 16:
        (n,) = struct.unpack(">i", frame[12:16])
        if 0 <= n <= len(frame) - 16:
            path = frame[16:16 + n].decode(errors="replace")
    return xid, op, path


class Fault:
    """One aimed fault: the (skip+1)-th request of `ops` under `under` on this client's
    connections is struck with `action`, once, for the next `next` ones, or for every
    matching request for `window_ms` from the first strike."""

    def __init__(self, spec):
        self.__dict__.update(spec)
        self.seen = 0
        self.struck = 0
        self.first_strike = None

    def strikes(self, op, path):
        if op not in self.ops or path is None or not path.startswith(self.under):
            return False
        self.seen += 1
        if self.seen <= self.skip:
            return False
        now = time.monotonic()
        if self.window_ms:
            if self.first_strike is not None and now - self.first_strike > self.window_ms / 1000:
                return False
        elif self.struck >= max(self.next, 1):
            return False
        if self.first_strike is None:
            self.first_strike = now
        self.struck += 1
        return True


def striking(faults, op, path):
    """The fault that strikes this request, if any: every fault counts every matching
    request, as zklock's proxy does (a chained point's NTH counts the first's strike)."""
    struck = [f for f in faults if f.strikes(op, path)]
    return struck[0] if struck else None


class Proxy:
    """One client's proxy to the server: every connection of its session goes through it,
    and its faults count the requests of all of them."""

    def __init__(self, index, upstream, faults, on_give_up, on_expire):
        self.index = index
        self.upstream = upstream
        self.faults = faults
        self.on_give_up = on_give_up
        self.on_expire = on_expire
        self.refused_session = None
        # Requests struck so far: a timed acquire's bound grows by a session timeout each.
        self.strikes = 0
        self.last_strike = 0.0
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self.accept, daemon=True).start()

    def close(self):
        self.closed = True
        self.listener.close()

    def accept(self):
        while not self.closed:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            host, port = self.upstream.rsplit(":", 1)
            try:
                up = socket.create_connection((host, int(port)), timeout=CONNECT_S)
                up.settimeout(None)
            except OSError:
                down.close()
                continue
            conn = {"down": down, "up": up, "withheld": None, "cut": False}
            threading.Thread(target=self.to_server, args=(conn,), daemon=True).start()
            threading.Thread(target=self.to_client, args=(conn,), daemon=True).start()

    def cut(self, conn):
        conn["cut"] = True
        for s in (conn["down"], conn["up"]):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def to_server(self, conn):
        first = True
        while True:
            frame = read_frame(conn["down"])
            if frame is None or conn["cut"]:
                return self.cut(conn)
            if first:
                first = False
                # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd.
                (session,) = struct.unpack(">q", frame[20:28]) if len(frame) >= 28 else (0,)
                if session and session == self.refused_session:
                    return self.cut(conn)
            else:
                xid, op, path = request_of(frame)
                with self.lock:
                    fault = striking(self.faults, op, path)
                if fault is not None:
                    self.strikes += 1
                    self.last_strike = time.monotonic()
                    log("client %d: %s at %s %s (xid %d)"
                        % (self.index, fault.action, OP_NAMES.get(op), path, xid))
                    if fault.action == "drop-request":
                        return self.cut(conn)
                    if fault.action == "withhold-reply":
                        conn["withheld"] = xid
                    elif fault.action == "expire":
                        self.cut(conn)
                        return self.on_expire(self)
                    elif fault.action == "give-up":
                        # The caller gives the acquire up while its request is in flight.
                        self.on_give_up(self.index)
                        time.sleep(fault.give_up_hold_ms / 1000)
            try:
                conn["up"].sendall(frame)
            except OSError:
                return self.cut(conn)

    def to_client(self, conn):
        first = True
        while True:
            frame = read_frame(conn["up"])
            if frame is None or conn["cut"]:
                return self.cut(conn)
            if not first and conn["withheld"] is not None and len(frame) >= 8:
                (xid,) = struct.unpack(">i", frame[4:8])
                if xid == conn["withheld"]:
                    # Applied by the server; its client never hears of it.
                    return self.cut(conn)
            first = False
            try:
                conn["down"].sendall(frame)
            except OSError:
                return self.cut(conn)


# --- the script: each client's attempts, as zklock's workload runs them -----------------

def mode_of(index, k):
    """Client `index`'s `k`-th attempt's mode (from 0): zklock's mix of modes."""
    s = SCRIPT
    k += s["mix_offset"]
    every = max(s["drop_every"], 1)
    if s["drop_every"] > 0 and k % every == every - 1:
        after_ms = ((k // every) * 7 + index * 3) % (s["drop_after_ms_max"] + 1)
        return "dropped", after_ms
    return ("blocking", "try", "timed")[k % 3], 0


def hold_s(k):
    """How long the hold of the `k`-th attempt (from 1) lasts."""
    s = SCRIPT
    every = s["long_hold_every"]
    ms = s["long_hold_ms"] if every > 0 and k % every == 0 else s["hold_ms"]
    return ms / 1000


class Client:
    def __init__(self, index, hosts):
        self.index = index
        self.zk = KazooClient(hosts=hosts, timeout=SCRIPT["session_timeout_ms"] / 1000)
        self.lock = None
        self.attempts = []  # (attempt, mode, outcome, started, ended, node)
        self.expired = False
        self.zk.add_listener(self.on_state)

    def on_state(self, state):
        if state == KazooState.LOST:
            self.expired = True

    def make_lock(self):
        kind, path = SCRIPT["kind"], SCRIPT["lock_path"]
        if kind == "semaphore":
            return Semaphore(self.zk, path, identifier="repro", max_leases=1)
        if kind == "rw":
            cls = ReadLock if self.index < SCRIPT["readers"] else WriteLock
            return cls(self.zk, path, identifier="repro")
        return Lock(self.zk, path, identifier="repro")

    def node_of(self):
        """The node of the lock's last attempt, if it made one."""
        if SCRIPT["kind"] == "semaphore":
            return self.lock.create_path
        node = getattr(self.lock, "node", None)
        return SCRIPT["lock_path"] + "/" + node if node else None

    def give_up(self):
        if self.lock is not None:
            self.lock.cancel()


class Run:
    def __init__(self, hosts, faulted):
        self.hosts = hosts
        self.holders = []
        self.last_release = 0.0
        self.violations = []
        self.state = threading.Lock()
        self.clients = []
        self.proxies = []
        for i in range(SCRIPT["clients"]):
            faults = [Fault(f) for f in SCRIPT["faults"] if faulted and f["client"] == i]
            proxy = Proxy(i, hosts, faults, self.give_up, self.expire)
            self.proxies.append(proxy)
            self.clients.append(Client(i, proxy.address))

    def give_up(self, index):
        self.clients[index].give_up()

    def expire(self, proxy):
        """The session the proxy caught is closed at the server, its reconnects refused
        until then, so that its client learns Expired when it reconnects."""
        client = self.clients[proxy.index]
        sid, passwd = client.zk.client_id
        proxy.refused_session = sid
        closer = KazooClient(hosts=self.hosts, client_id=(sid, passwd),
                             timeout=SCRIPT["session_timeout_ms"] / 1000)
        try:
            closer.start(timeout=CONNECT_S)
            closer.stop()
            closer.close()
        finally:
            proxy.refused_session = None
        log("client %d: session 0x%x expired" % (proxy.index, sid))

    def violate(self, msg):
        log("VIOLATION: " + msg)
        with self.state:
            self.violations.append(msg)

    def attempt(self, c, k):
        mode, after_ms = mode_of(c.index, k)
        if SCRIPT["fresh_lock_every"] and (k + 1) % SCRIPT["fresh_lock_every"] == 0:
            c.lock = c.make_lock()
        started = time.monotonic()
        result = {}

        def call():
            try:
                if mode == "try":
                    result["got"] = c.lock.acquire(blocking=False)
                elif mode == "timed":
                    try:
                        result["got"] = c.lock.acquire(timeout=SCRIPT["acquire_timeout_ms"] / 1000)
                    except LockTimeout:
                        result["got"] = False
                else:
                    result["got"] = c.lock.acquire()
            except CancelledError:
                result["got"] = False
            except KazooException as e:
                result["error"] = "%s: %s" % (type(e).__name__, e)

        t = threading.Thread(target=call, daemon=True)
        t.start()
        if mode == "dropped":
            t.join(after_ms / 1000)
            if t.is_alive():
                c.lock.cancel()
        if mode == "blocking":
            self.wait_served(c, k, t, started)
        t.join(RUN_DEADLINE_S)
        if t.is_alive():
            self.violate("client %d's %s acquire (attempt %d) never returned" % (c.index, mode, k + 1))
            return False
        ended = time.monotonic()
        got = result.get("got", False)
        outcome = "acquired" if got else result.get("error") or {
            "try": "held by another", "timed": "timed out", "dropped": "cancelled",
            "blocking": "failed"}[mode]
        c.attempts.append((k + 1, mode, outcome, started, ended, c.node_of()))
        log("client %d attempt %d (%s): %s after %.3f s" % (c.index, k + 1, mode, outcome, ended - started))
        if mode == "timed" and "timed_acquire_in_time" in SCRIPT["check"]:
            timeout = SCRIPT["acquire_timeout_ms"] / 1000
            strikes = self.proxies[c.index].strikes
            bound = timeout + TIMED_GRACE_S + strikes * (SCRIPT["session_timeout_ms"] / 1000)
            if ended - started > bound:
                self.violate("client %d's acquire(timeout=%.1f) returned after %.1f s (%s), past "
                             "its timeout and %.0f s of grace (%.1f s)"
                             % (c.index, timeout, ended - started, outcome, TIMED_GRACE_S, bound))
        if not got:
            return True
        if "fencing_token_order" in SCRIPT["check"]:
            node = c.node_of()
            if node is None or c.zk.exists(node) is None:
                self.violate("client %d's acquire() returned True, but its node %s is gone "
                             "(its session's)" % (c.index, node))
        self.hold(c, k)
        return True

    def wait_served(self, c, k, t, started):
        """liveness_after_heal: a blocking acquire is served within the liveness bound
        (twice the session timeout and 1 s) of its start, the last fault and the last
        release; past it, with nobody holding, the lock is stuck and the acquire is
        cancelled, as zklock's drain cancels it."""
        bound = 2 * SCRIPT["session_timeout_ms"] / 1000 + 1
        while t.is_alive():
            t.join(0.05)
            with self.state:
                held = bool(self.holders)
                since = max([started, self.last_release] + [p.last_strike for p in self.proxies])
            now = time.monotonic()
            if t.is_alive() and not held and now - since > bound:
                if "liveness_after_heal" in SCRIPT["check"]:
                    self.violate("client %d's %s.acquire() (attempt %d) waited %.1f s with nobody "
                                 "holding the lock, past the bound of %.1f s (twice the session "
                                 "timeout and 1 s)" % (c.index, type(c.lock).__name__, k + 1,
                                                       now - started, bound))
                c.lock.cancel()
                return

    def hold(self, c, k):
        writer = SCRIPT["kind"] != "rw" or c.index >= SCRIPT["readers"]
        with self.state:
            others = [i for i, w in self.holders if w or writer]
            if others and "mutual_exclusion" in SCRIPT["check"]:
                self.violations.append("clients %d and %d held the lock at once" % (others[0], c.index))
            self.holders.append((c.index, writer))
        time.sleep(hold_s(k + 1))
        try:
            c.lock.release()
        except KazooException as e:
            log("client %d: release failed: %s" % (c.index, e))
        with self.state:
            self.holders.remove((c.index, writer))
            self.last_release = time.monotonic()

    def script(self, c):
        time.sleep(c.index * SCRIPT["start_stagger_ms"] / 1000)
        for k in range(SCRIPT["attempts"]):
            if not self.attempt(c, k):
                return
            if c.attempts[-1][2] != "acquired" and SCRIPT["idle_after_give_up_ms"]:
                time.sleep(SCRIPT["idle_after_give_up_ms"] / 1000)

    def leaks(self):
        """node_outlives_attempt: a node of an attempt that ended, still there while its
        session lives, the leak bound after the attempt's end."""
        bound = SCRIPT["leak_bound_ms"] / 1000
        dirs = [SCRIPT["lock_path"]]
        if SCRIPT["kind"] == "semaphore":
            dirs.append(SCRIPT["lock_path"] + "-__lock__")
        sessions = {c.session: c for c in self.clients}
        left = []
        for c in self.clients:
            # A client cut by its fault reconnects first (its session lives on).
            deadline = time.monotonic() + CONNECT_S
            while c.zk.state != KazooState.CONNECTED and time.monotonic() < deadline:
                time.sleep(0.05)
        for d in dirs:
            for child in self.clients[0].zk.get_children(d) if self.clients[0].zk.exists(d) else []:
                stat = self.clients[0].zk.exists(d + "/" + child)
                if stat is not None and stat.ephemeralOwner in sessions:
                    left.append((d + "/" + child, sessions[stat.ephemeralOwner]))
        for node, c in left:
            made = [a for a in c.attempts if a[5] == node]
            attempt = made[-1] if made else c.attempts[-1]
            wait = attempt[4] + bound - time.monotonic()
            log("client %d: node %s left by attempt %d (%s); waiting %.1f s"
                % (c.index, node, attempt[0], attempt[2], max(wait, 0)))
            if wait > 0:
                time.sleep(wait)
            alive = c.zk.state == KazooState.CONNECTED and c.zk.client_id[0] == c.session
            if alive and not c.expired and c.zk.exists(node):
                self.violate("node %s outlived its failed acquire (client %d's attempt %d, %s) by "
                             "%.1f s while its session lived"
                             % (node, c.index, attempt[0], attempt[2], time.monotonic() - attempt[4]))

    def run(self):
        for c in self.clients:
            c.zk.start(timeout=CONNECT_S)
            c.session = c.zk.client_id[0]
            c.lock = c.make_lock()
        threads = [threading.Thread(target=self.script, args=(c,), daemon=True) for c in self.clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(RUN_DEADLINE_S)
        if any(t.is_alive() for t in threads):
            self.violate("the script did not end within %.0f s" % RUN_DEADLINE_S)
        elif "node_outlives_attempt" in SCRIPT["check"]:
            self.leaks()
        for c in self.clients:
            c.zk.stop()
            c.zk.close()
        for p in self.proxies:
            p.close()
        return self.violations


def main(argv):
    faulted = "--no-fault" not in argv
    hosts = os.environ.get("ZK_HOSTS")
    if "--hosts" in argv:
        hosts = argv[argv.index("--hosts") + 1]
    if hosts:
        # A server of the user's may hold other runs' nodes: this run's are its own.
        root = "/repro-%d" % os.getpid()
        SCRIPT["lock_path"] = root + SCRIPT["lock_path"]
        for f in SCRIPT["faults"]:
            f["under"] = root + f["under"]
    server = None if hosts else Server()
    where = (hosts or server.hosts).split(",")[0].rsplit(":", 1)
    srvr = four_letter(int(where[1]), "srvr") if where[0] in ("127.0.0.1", "localhost") else ""
    zk = srvr.split("\n")[0].replace("Zookeeper version: ", "").split("-${")[0] or "unknown"
    log("versions: Kazoo %s, ZooKeeper %s, Python %s"
        % (kazoo.version.__version__, zk.split(",")[0], sys.version.split()[0]))
    try:
        violations = Run(hosts or server.hosts, faulted).run()
    finally:
        if server is not None:
            server.stop()
    assert not violations, "; ".join(violations)
    print("the lock behaved" + ("" if faulted else " (no fault injected)"))


if __name__ == "__main__":
    main(sys.argv[1:])
