// curator-semaphore-mutex: fencing_token_order after 0:expire:delete:/zklock/lock/locks/
//
// As zklock runs it: zklock real --lock curator-semaphore-mutex --clients 1 --attempts 1 --session-timeout-ms 2000 --hold-ms 5 --drop-every 4 --acquire-timeout-ms 1000 --duration 30000ms --faults none --aim 0:expire:delete:/zklock/lock/locks/
//
// A reproduction exported by zklock (zklock is not needed to run it): one Java file that
// needs Curator's jars alone (Debian's in /usr/share/java). It starts a ZooKeeper
// server of its own in this JVM, on a free loopback port, unless one is given
// (ZK_HOSTS=host:port, or --hosts).
//
// It runs the script below: each client has a ZooKeeper session of its own, connected
// through a small TCP proxy this file carries, which injects exactly the finding's faults
// at the requests it names. It exits 1 with a java.lang.AssertionError that states what
// the lock did wrong, or 0 when the lock behaved.
//
//   javac -cp "$CP" Repro.java && java -cp "$CP:." Repro [--no-fault] [--hosts HOST:PORT]
//     --no-fault  the same script with no fault injected (the control: it must pass)
//     --hosts     a ZooKeeper server to use instead of starting one (also ZK_HOSTS)
//   CP: /usr/share/java/curator-recipes.jar:/usr/share/java/curator-framework.jar:/usr/share/java/curator-client.jar:/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/guava.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar

import java.io.DataInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class Repro {
    // --- the finding: the script's clients and attempts, the faults, what is checked ----
    static final String KIND = "semaphore-mutex";
    static String LOCK_PATH = "/zklock/lock";
    // Where its nodes are kept.
    static final String[] NODE_DIRS = {"/zklock/lock/locks", "/zklock/lock/leases"};
    static final int CLIENTS = 1, READERS = 0, ATTEMPTS = 1;
    static final long SESSION_TIMEOUT_MS = 2000, HOLD_MS = 5, ACQUIRE_TIMEOUT_MS = 1000;
    // Every DROP_EVERY-th attempt is given up (interrupted) after a few ms.
    static final int DROP_EVERY = 4, MIX_OFFSET = 0, LONG_HOLD_EVERY = 0, FRESH_LOCK_EVERY = 0;
    static final long DROP_AFTER_MS_MAX = 20, START_STAGGER_MS = 0, LONG_HOLD_MS = 0, IDLE_AFTER_GIVE_UP_MS = 0;
    // How long a failed attempt's node may outlive it while its session lives.
    static final long LEAK_BOUND_MS = 5000;
    // client, action, request types, path prefix, matching requests let through first,
    // how many struck (or a window in ms), how long a give-up holds its request.
    static final Fault[] FAULTS = {
        new Fault(0, "expire", Set.of(2), "/zklock/lock/locks/", 0, 1, 0, 1000),
    };
    static final Set<String> CHECK = Set.of("fencing_token_order");

    // Bounds that hold only when something hangs: a server start, a connect, the run.
    static final long CONNECT_MS = 30_000;
    static final long RUN_DEADLINE_MS = 300_000;
    // What a timed acquire may take past its timeout: its cleanup's grace, as zklock's
    // checker allows it (timed_acquire_in_time).
    static final long TIMED_GRACE_MS = 1_000;
    static final long T0 = System.nanoTime();

    static void log(String msg) {
        System.err.printf("[%7.3f] %s%n", (System.nanoTime() - T0) / 1e9, msg);
    }

    static double secondsSince(long nanos) {
        return (System.nanoTime() - nanos) / 1e9;
    }

    // --- a ZooKeeper server in this JVM, in a temp dir, on a free loopback port ---------

    static final class Server {
        final File dir;
        final ZooKeeperServer zks;
        final ServerCnxnFactory factory;
        final String hosts;

        Server() throws Exception {
            System.setProperty("zookeeper.forceSync", "no");
            System.setProperty("zookeeper.admin.enableServer", "false");
            dir = Files.createTempDirectory("zk-repro-").toFile();
            // A short tick, so that the script's short sessions are allowed (2 ticks at least).
            zks = new ZooKeeperServer(dir, dir, 200);
            zks.setMinSessionTimeout(400);
            zks.setMaxSessionTimeout(60_000);
            factory = ServerCnxnFactory.createFactory(new InetSocketAddress("127.0.0.1", 0), 100);
            factory.startup(zks);
            hosts = "127.0.0.1:" + factory.getLocalPort();
        }

        void stop() {
            factory.shutdown();
            zks.shutdown();
            try (var files = Files.walk(dir.toPath())) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                // a temp dir left behind
            }
        }
    }

    // --- the fault-injecting proxy: ZooKeeper's framing, a 4-byte big-endian length ------

    static final Map<Integer, String> OP_NAMES = Map.of(1, "create", 2, "delete", 3, "exists",
            4, "get-data", 5, "set-data", 8, "get-children", 12, "get-children", 15, "create",
            19, "create", 21, "create");

    /** One frame with its length, or null at the connection's end. */
    static byte[] readFrame(DataInputStream in) {
        try {
            int n = in.readInt();
            if (n < 0 || n > 64 << 20) return null;
            byte[] frame = new byte[4 + n];
            ByteBuffer.wrap(frame).putInt(n);
            in.readFully(frame, 4, n);
            return frame;
        } catch (IOException e) {
            return null;
        }
    }

    /** The path a request's body starts with (after xid and type), for the ops that have one. */
    static String pathOf(byte[] frame, int op) {
        if (!OP_NAMES.containsKey(op) || frame.length < 16) return null;
        int n = ByteBuffer.wrap(frame, 12, 4).getInt();
        if (n < 0 || n > frame.length - 16) return null;
        return new String(frame, 16, n, StandardCharsets.UTF_8);
    }

    /**
     * One aimed fault: the (skip+1)-th request of `ops` under `under` on its client's
     * connections is struck with `action`, once, for the next `next` ones, or for every
     * matching request for `windowMs` from the first strike.
     */
    static final class Fault {
        final int client;
        final String action;
        final Set<Integer> ops;
        String under;
        final int skip, next;
        final long windowMs, giveUpHoldMs;
        int seen = 0, struck = 0;
        long firstStrike = 0;

        Fault(int client, String action, Set<Integer> ops, String under, int skip, int next,
                long windowMs, long giveUpHoldMs) {
            this.client = client;
            this.action = action;
            this.ops = ops;
            this.under = under;
            this.skip = skip;
            this.next = next;
            this.windowMs = windowMs;
            this.giveUpHoldMs = giveUpHoldMs;
        }

        Fault copy() {
            return new Fault(client, action, ops, under, skip, next, windowMs, giveUpHoldMs);
        }

        boolean strikes(int op, String path) {
            if (!ops.contains(op) || path == null || !path.startsWith(under)) return false;
            seen++;
            if (seen <= skip) return false;
            long now = System.nanoTime();
            if (windowMs > 0) {
                if (struck > 0 && now - firstStrike > windowMs * 1_000_000L) return false;
            } else if (struck >= Math.max(next, 1)) {
                return false;
            }
            if (struck == 0) firstStrike = now;
            struck++;
            return true;
        }
    }

    /** One client's proxy: every connection of its session goes through it. */
    final class Proxy {
        final int index;
        final List<Fault> faults;
        final ServerSocket listener;
        volatile long refusedSession = 0;
        // Requests struck so far: a timed acquire's bound grows by a session timeout each.
        volatile int strikes = 0;
        volatile long lastStrike = 0;
        volatile boolean closed = false;

        Proxy(int index, List<Fault> faults) throws IOException {
            this.index = index;
            this.faults = faults;
            listener = new ServerSocket();
            listener.bind(new InetSocketAddress("127.0.0.1", 0));
            daemon(this::accept);
        }

        String address() {
            return "127.0.0.1:" + listener.getLocalPort();
        }

        void close() {
            closed = true;
            try {
                listener.close();
            } catch (IOException e) {
                // closed already
            }
        }

        void accept() {
            while (!closed) {
                try {
                    Socket down = listener.accept();
                    String[] hp = hosts.split(",")[0].split(":");
                    Socket up = new Socket();
                    try {
                        up.connect(new InetSocketAddress(hp[0], Integer.parseInt(hp[1])), (int) CONNECT_MS);
                    } catch (IOException e) {
                        down.close();
                        continue;
                    }
                    Conn c = new Conn(down, up);
                    daemon(() -> toServer(c));
                    daemon(() -> toClient(c));
                } catch (IOException e) {
                    return;
                }
            }
        }

        /** The fault that strikes this request, if any: every fault counts every matching request. */
        synchronized Fault striking(int op, String path) {
            Fault hit = null;
            for (Fault f : faults) {
                if (f.strikes(op, path) && hit == null) hit = f;
            }
            return hit;
        }

        void toServer(Conn c) {
            try {
                DataInputStream in = new DataInputStream(c.down.getInputStream());
                OutputStream out = c.up.getOutputStream();
                boolean first = true;
                while (true) {
                    byte[] frame = readFrame(in);
                    if (frame == null || c.cut) return;
                    if (first) {
                        first = false;
                        // ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd.
                        long session = frame.length >= 28 ? ByteBuffer.wrap(frame, 20, 8).getLong() : 0;
                        if (session != 0 && session == refusedSession) return;
                    } else {
                        ByteBuffer b = ByteBuffer.wrap(frame);
                        int xid = b.getInt(4), op = b.getInt(8);
                        String path = pathOf(frame, op);
                        Fault f = striking(op, path);
                        if (f != null) {
                            strikes++;
                            lastStrike = System.nanoTime();
                            log(String.format("client %d: %s at %s %s (xid %d)", index, f.action,
                                    OP_NAMES.get(op), path, xid));
                            switch (f.action) {
                                case "drop-request":
                                    return;
                                case "withhold-reply":
                                    c.withheld = xid;
                                    break;
                                case "expire":
                                    c.close();
                                    expire(this);
                                    return;
                                default: // give-up: the caller gives up while the request is in flight
                                    clients.get(index).giveUp();
                                    Thread.sleep(f.giveUpHoldMs);
                            }
                        }
                    }
                    out.write(frame);
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                // the connection ended
            } finally {
                c.close();
            }
        }

        void toClient(Conn c) {
            try {
                DataInputStream in = new DataInputStream(c.up.getInputStream());
                OutputStream out = c.down.getOutputStream();
                boolean first = true;
                while (true) {
                    byte[] frame = readFrame(in);
                    if (frame == null || c.cut) return;
                    if (!first && c.withheld != null && frame.length >= 8
                            && ByteBuffer.wrap(frame).getInt(4) == c.withheld) {
                        // Applied by the server; its client never hears of it.
                        return;
                    }
                    first = false;
                    out.write(frame);
                    out.flush();
                }
            } catch (IOException e) {
                // the connection ended
            } finally {
                c.close();
            }
        }
    }

    static final class Conn {
        final Socket down, up;
        volatile Integer withheld = null;
        volatile boolean cut = false;

        Conn(Socket down, Socket up) {
            this.down = down;
            this.up = up;
        }

        void close() {
            cut = true;
            for (Socket s : new Socket[] {down, up}) {
                try {
                    s.close();
                } catch (IOException e) {
                    // closed already
                }
            }
        }
    }

    static void daemon(Runnable r) {
        Thread t = new Thread(r);
        t.setDaemon(true);
        t.start();
    }

    /** An attempt that ended: its number (from 1), mode, outcome, start, end and node. */
    record Attempt(int number, String mode, String outcome, long started, long ended, String node) {}

    // --- the script: each client's attempts, as zklock's workload runs them -------------

    /** Client `index`'s `k`-th attempt's mode (from 0), and a dropped one's delay. */
    static Object[] modeOf(int index, int k) {
        k += MIX_OFFSET;
        int every = Math.max(DROP_EVERY, 1);
        if (DROP_EVERY > 0 && k % every == every - 1) {
            long afterMs = ((long) (k / every) * 7 + index * 3L) % (DROP_AFTER_MS_MAX + 1);
            return new Object[] {"dropped", afterMs};
        }
        return new Object[] {new String[] {"blocking", "try", "timed"}[k % 3], 0L};
    }

    /** How long the hold of the `k`-th attempt (from 1) lasts. */
    static long holdMs(int k) {
        return LONG_HOLD_EVERY > 0 && k % LONG_HOLD_EVERY == 0 ? LONG_HOLD_MS : HOLD_MS;
    }

    final String hosts;
    final boolean faulted;
    final List<Client> clients = new ArrayList<>();
    final List<Proxy> proxies = new ArrayList<>();
    final List<Integer> holders = new ArrayList<>();
    final List<String> violations = new ArrayList<>();
    volatile long lastRelease = 0;
    ZooKeeper observer;
    volatile boolean broken = false;

    Repro(String hosts, boolean faulted) throws Exception {
        this.hosts = hosts;
        this.faulted = faulted;
        for (int i = 0; i < CLIENTS; i++) {
            List<Fault> mine = new ArrayList<>();
            for (Fault f : FAULTS) {
                if (faulted && f.client == i) mine.add(f.copy());
            }
            Proxy p = new Proxy(i, mine);
            proxies.add(p);
            clients.add(new Client(i, p.address()));
        }
    }

    synchronized void violate(String msg) {
        log("VIOLATION: " + msg);
        violations.add(msg);
    }

    /**
     * The session the proxy caught is closed at the server, its reconnects refused until
     * then, so that its client learns it expired when it reconnects.
     */
    void expire(Proxy proxy) {
        Client c = clients.get(proxy.index);
        long sid = c.sessionId();
        proxy.refusedSession = sid;
        try {
            CountDownLatch connected = new CountDownLatch(1);
            ZooKeeper closer = new ZooKeeper(hosts, (int) SESSION_TIMEOUT_MS, e -> {
                if (e.getState() == Watcher.Event.KeeperState.SyncConnected) connected.countDown();
            }, sid, c.sessionPasswd());
            connected.await(CONNECT_MS, TimeUnit.MILLISECONDS);
            closer.close();
            log(String.format("client %d: session 0x%x expired", proxy.index, sid));
        } catch (Exception e) {
            log("client " + proxy.index + ": closing its session failed: " + e);
        } finally {
            proxy.refusedSession = 0;
        }
    }

    /** One attempt of client `c`; false when the script cannot go on. */
    boolean attempt(Client c, int k) throws Exception {
        Object[] m = modeOf(c.index, k);
        String mode = (String) m[0];
        long afterMs = (Long) m[1];
        if (FRESH_LOCK_EVERY > 0 && (k + 1) % FRESH_LOCK_EVERY == 0) c.lock = c.makeLock();
        long started = System.nanoTime();
        Thread me = Thread.currentThread();
        c.beginAcquire(me);
        // A watch of its own: a dropped acquire's cancel, a blocking one's liveness bound.
        Thread watch = new Thread(() -> watch(c, k, mode, afterMs, started));
        watch.setDaemon(true);
        watch.start();
        boolean got = false;
        String outcome;
        try {
            long timeoutMs = mode.equals("timed") ? ACQUIRE_TIMEOUT_MS : mode.equals("try") ? 0 : -1;
            got = c.lock.acquire(timeoutMs);
            outcome = got ? "acquired" : Map.of("try", "held by another", "timed", "timed out",
                    "dropped", "cancelled", "blocking", "failed").get(mode);
        } catch (InterruptedException e) {
            outcome = "cancelled";
        } catch (Exception e) {
            outcome = e.getCause() instanceof InterruptedException ? "cancelled: " + e : e.toString();
        } finally {
            c.endAcquire();
        }
        watch.interrupt();
        watch.join();
        long ended = System.nanoTime();
        c.attempts.add(new Attempt(k + 1, mode, outcome, started, ended, c.lock.node()));
        log(String.format("client %d attempt %d (%s): %s after %.3f s", c.index, k + 1, mode, outcome,
                (ended - started) / 1e9));
        if (mode.equals("timed") && CHECK.contains("timed_acquire_in_time")) {
            long strikes = proxies.get(c.index).strikes;
            double bound = (ACQUIRE_TIMEOUT_MS + TIMED_GRACE_MS + strikes * SESSION_TIMEOUT_MS) / 1000.0;
            if ((ended - started) / 1e9 > bound) {
                violate(String.format("client %d's acquire(%d, MILLISECONDS) returned after %.1f s (%s), "
                        + "past its timeout and %d s of grace (%.1f s)", c.index, ACQUIRE_TIMEOUT_MS,
                        (ended - started) / 1e9, outcome, TIMED_GRACE_MS / 1000, bound));
            }
        }
        if (!got) return true;
        if (CHECK.contains("fencing_token_order")) {
            String node = c.lock.node();
            if (node == null || observer.exists(node, false) == null) {
                violate(String.format("client %d's %s returned true, but its node %s is gone "
                        + "(its session's)", c.index, c.lock.name(), node));
            }
        }
        hold(c, k);
        return true;
    }

    /**
     * A dropped acquire is cancelled after its delay. liveness_after_heal: a blocking
     * acquire is served within the liveness bound (twice the session timeout and 1 s) of
     * its start, the last fault and the last release; past it, with nobody holding, the
     * lock is stuck and the acquire is cancelled, as zklock's drain cancels it.
     */
    void watch(Client c, int k, String mode, long afterMs, long started) {
        try {
            if (mode.equals("dropped")) {
                Thread.sleep(afterMs);
                c.cancel();
                return;
            }
            if (!mode.equals("blocking")) return;
            double bound = 2 * SESSION_TIMEOUT_MS / 1000.0 + 1;
            while (true) {
                Thread.sleep(50);
                long since = Math.max(started, lastRelease);
                boolean held;
                synchronized (this) {
                    held = !holders.isEmpty();
                }
                for (Proxy p : proxies) since = Math.max(since, p.lastStrike);
                if (!held && secondsSince(since) > bound) {
                    if (CHECK.contains("liveness_after_heal")) {
                        violate(String.format("client %d's %s (attempt %d) waited %.1f s with "
                                + "nobody holding the lock, past the bound of %.1f s (twice the session "
                                + "timeout and 1 s)", c.index, c.lock.name(), k + 1, secondsSince(started),
                                bound));
                    }
                    c.cancel();
                    return;
                }
            }
        } catch (InterruptedException e) {
            // the acquire ended
        }
    }

    void hold(Client c, int k) throws InterruptedException {
        synchronized (this) {
            if (!holders.isEmpty() && CHECK.contains("mutual_exclusion")) {
                boolean reader = READERS > c.index;
                boolean othersWrite = holders.stream().anyMatch(h -> h >= READERS);
                if (!reader || othersWrite) {
                    violate(String.format("clients %d and %d held the lock at once", holders.get(0), c.index));
                }
            }
            holders.add(c.index);
        }
        Thread.sleep(holdMs(k + 1));
        try {
            c.lock.release();
        } catch (Exception e) {
            log("client " + c.index + ": release failed: " + e);
        }
        synchronized (this) {
            holders.remove(Integer.valueOf(c.index));
            lastRelease = System.nanoTime();
        }
    }

    void script(Client c) {
        try {
            Thread.sleep(c.index * START_STAGGER_MS);
            for (int k = 0; k < ATTEMPTS; k++) {
                if (!attempt(c, k)) return;
                String outcome = c.attempts.get(c.attempts.size() - 1).outcome();
                if (!outcome.equals("acquired") && IDLE_AFTER_GIVE_UP_MS > 0) Thread.sleep(IDLE_AFTER_GIVE_UP_MS);
            }
        } catch (Exception e) {
            // Not the lock's failure: the run is no verdict.
            log("client " + c.index + "'s script broke: " + e);
            broken = true;
        }
    }

    /**
     * node_outlives_attempt: a node of an attempt that ended, still there while its
     * session lives, the leak bound after the attempt's end.
     */
    void leaks() throws Exception {
        for (Object[] l : nodesOfLiveSessions()) {
            String node = (String) l[0];
            Client c = (Client) l[1];
            // The attempt that knew it as its node; else the last (the node of a lost
            // reply is known to none).
            Attempt attempt = c.attempts.get(c.attempts.size() - 1);
            boolean known = false;
            for (Attempt a : c.attempts) {
                if (a.node() != null && node.endsWith(a.node().substring(a.node().lastIndexOf('/') + 1))) {
                    attempt = a;
                    known = true;
                }
            }
            long waitMs = LEAK_BOUND_MS - (System.nanoTime() - attempt.ended()) / 1_000_000L;
            log(String.format("client %d: node %s left by attempt %d (%s); waiting %.1f s", c.index, node,
                    attempt.number(), attempt.outcome(), Math.max(waitMs, 0) / 1000.0));
            if (waitMs > 0) Thread.sleep(waitMs);
            if (c.alive() && c.sessionId() == c.session && observer.exists(node, false) != null) {
                String what = !known ? "its client's last acquire"
                        : attempt.outcome().equals("acquired") ? "the release of its hold" : "its failed acquire";
                violate(String.format("node %s outlived %s (client %d's attempt %d, %s) by %.1f s while "
                        + "its session lived", node, what,
                        c.index, attempt.number(), attempt.outcome(), secondsSince(attempt.ended())));
            }
        }
    }

    /** The nodes of the lock that this run's sessions own, each with its client. */
    List<Object[]> nodesOfLiveSessions() throws Exception {
        Map<Long, Client> sessions = new HashMap<>();
        for (Client c : clients) {
            sessions.put(c.session, c);
            // A client cut by its fault reconnects first (its session lives on).
            c.awaitConnected();
        }
        List<Object[]> left = new ArrayList<>();
        for (String d : NODE_DIRS) {
            List<String> children;
            try {
                children = new ArrayList<>(observer.getChildren(d, false));
            } catch (KeeperException.NoNodeException e) {
                continue;
            }
            children.sort(null);
            for (String child : children) {
                Stat stat = observer.exists(d + "/" + child, false);
                if (stat != null && sessions.containsKey(stat.getEphemeralOwner())) {
                    left.add(new Object[] {d + "/" + child, sessions.get(stat.getEphemeralOwner())});
                }
            }
        }
        return left;
    }

    /**
     * liveness_after_heal, once every client is done: a node of a live session still
     * there the liveness bound after the last attempt, the last fault and the last
     * release, with nobody holding, blocks every later acquire.
     */
    void remains() throws Exception {
        long since = lastRelease;
        for (Client c : clients) {
            for (Attempt a : c.attempts) since = Math.max(since, a.ended());
        }
        for (Proxy p : proxies) since = Math.max(since, p.lastStrike);
        long boundMs = 2 * SESSION_TIMEOUT_MS + 1000;
        long waitMs = boundMs - (System.nanoTime() - since) / 1_000_000L;
        if (waitMs > 0) Thread.sleep(waitMs);
        for (Object[] l : nodesOfLiveSessions()) {
            Client c = (Client) l[1];
            boolean told;
            synchronized (this) {
                told = violations.stream().anyMatch(v -> v.contains((String) l[0]));
            }
            if (!told && c.alive() && c.sessionId() == c.session && observer.exists((String) l[0], false) != null) {
                violate(String.format("every client is done, nobody holds the lock, yet node %s of client "
                        + "%d's live session is still there %.1f s after the last attempt (the bound: "
                        + "twice the session timeout and 1 s): every later acquire waits behind it",
                        l[0], c.index, secondsSince(since)));
            }
        }
    }

    List<String> run() throws Exception {
        // The checks' own view of the lock's nodes, straight to the server: no fault, and
        // not a client's session, which may have expired.
        CountDownLatch up = new CountDownLatch(1);
        observer = new ZooKeeper(hosts, (int) Math.max(SESSION_TIMEOUT_MS, 4000), e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) up.countDown();
        });
        if (!up.await(CONNECT_MS, TimeUnit.MILLISECONDS)) throw new IllegalStateException("no session to the server");
        for (Client c : clients) {
            c.start();
            c.session = c.sessionId();
            c.lock = c.makeLock();
        }
        List<Thread> threads = new ArrayList<>();
        for (Client c : clients) {
            Thread t = new Thread(() -> script(c));
            t.setDaemon(true);
            threads.add(t);
            t.start();
        }
        long deadline = System.nanoTime() + RUN_DEADLINE_MS * 1_000_000L;
        boolean hung = false;
        for (Thread t : threads) {
            t.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000L));
            hung |= t.isAlive();
        }
        if (hung) {
            violate("the script did not end within " + RUN_DEADLINE_MS / 1000 + " s");
        } else {
            if (CHECK.contains("node_outlives_attempt")) leaks();
            if (CHECK.contains("liveness_after_heal")) remains();
        }
        for (Client c : clients) c.close();
        for (Proxy p : proxies) p.close();
        observer.close();
        return violations;
    }

    public static void main(String[] args) throws Exception {
        List<String> argv = Arrays.asList(args);
        boolean faulted = !argv.contains("--no-fault");
        String hosts = System.getenv("ZK_HOSTS");
        if (argv.contains("--hosts")) hosts = argv.get(argv.indexOf("--hosts") + 1);
        if (hosts != null && !hosts.isEmpty()) {
            // A server of the user's may hold other runs' nodes: this run's are its own.
            String root = "/repro-" + ProcessHandle.current().pid();
            LOCK_PATH = root + LOCK_PATH;
            for (int i = 0; i < NODE_DIRS.length; i++) NODE_DIRS[i] = root + NODE_DIRS[i];
            for (Fault f : FAULTS) f.under = root + f.under;
        } else {
            hosts = null;
        }
        Server server = hosts == null ? new Server() : null;
        log("versions: " + versions());
        List<String> violations;
        Repro run = new Repro(hosts == null ? server.hosts : hosts, faulted);
        try {
            violations = run.run();
        } finally {
            if (server != null) server.stop();
        }
        if (run.broken && violations.isEmpty()) {
            System.err.println("the script broke (above): no verdict");
            System.exit(3);
        }
        if (!violations.isEmpty()) {
            new AssertionError(String.join("; ", violations)).printStackTrace();
            System.exit(1);
        }
        System.out.println("the lock behaved" + (faulted ? "" : " (no fault injected)"));
        System.exit(0);
    }

    /** A jar's version from its name (Debian's links name the versioned jar). */
    static String jarVersion(Class<?> of) {
        String v = of.getPackage().getImplementationVersion();
        if (v != null) return v;
        try {
            java.nio.file.Path jar = java.nio.file.Paths.get(of.getProtectionDomain().getCodeSource().getLocation().toURI());
            java.util.regex.Pattern versioned = java.util.regex.Pattern.compile("-([0-9][^/]*)\\.jar$");
            String name = jar.toRealPath().getFileName().toString();
            java.util.regex.Matcher m = versioned.matcher(name);
            if (m.find()) return m.group(1);
            // Debian's unversioned jar is a file of its own on some systems: the versioned
            // one beside it names the version.
            String stem = name.replaceAll("\\.jar$", "");
            try (var dir = Files.newDirectoryStream(jar.getParent(), stem + "-[0-9]*.jar")) {
                for (java.nio.file.Path p : dir) {
                    java.util.regex.Matcher mv = versioned.matcher(p.getFileName().toString());
                    if (mv.find()) return mv.group(1);
                }
            }
            return "unknown";
        } catch (Exception e) {
            return "unknown";
        }
    }

    /** Makes the lock directory's parents, which the recipe leaves to its user. */
    static void makeParents(ZooKeeper zk, String path) throws KeeperException, InterruptedException {
        for (int at = path.indexOf('/', 1); at > 0; at = path.indexOf('/', at + 1)) {
            try {
                zk.create(path.substring(0, at), new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            } catch (KeeperException.NodeExistsException e) {
                // made by another client, or by this one before a lost reply
            }
        }
    }

    /** The library's lock as the script calls it. */
    interface ScriptLock {
        /** timeoutMs: -1 blocks, 0 tries once. */
        boolean acquire(long timeoutMs) throws Exception;

        void release() throws Exception;

        /** The node of its last attempt, if it made one. */
        String node();

        String name();
    }

    // --- the library's calls --------------------------------------------------------------

    abstract class ClientBase {
        final int index;
        final String address;
        final List<Attempt> attempts = new ArrayList<>();
        ScriptLock lock;
        long session;
        // The script thread while its acquire is under way (a cancel interrupts it).
        private Thread acquiring;

        ClientBase(int index, String address) {
            this.index = index;
            this.address = address;
        }

        synchronized void beginAcquire(Thread t) {
            Thread.interrupted();
            acquiring = t;
        }

        synchronized void endAcquire() {
            acquiring = null;
            Thread.interrupted(); // a cancel that came too late
        }

        /** Gives the acquire under way up, as a Java caller gives a blocking call up: an interrupt. */
        synchronized void cancel() {
            cancelled();
            if (acquiring != null) acquiring.interrupt();
        }

        void giveUp() {
            cancel();
        }

        void cancelled() {}

        abstract void start() throws Exception;

        abstract ZooKeeper zk() throws Exception;

        abstract ScriptLock makeLock();

        abstract boolean alive();

        abstract void close();

        long sessionId() {
            try {
                return zk().getSessionId();
            } catch (Exception e) {
                return 0;
            }
        }

        byte[] sessionPasswd() throws Exception {
            return zk().getSessionPasswd();
        }

        Stat exists(String path) throws Exception {
            return zk().exists(path, false);
        }

        List<String> children(String path) throws Exception {
            try {
                List<String> c = zk().getChildren(path, false);
                c.sort(null);
                return c;
            } catch (KeeperException.NoNodeException e) {
                return List.of();
            }
        }

        void awaitConnected() throws InterruptedException {
            long deadline = System.nanoTime() + CONNECT_MS * 1_000_000L;
            while (!alive() && System.nanoTime() < deadline) Thread.sleep(50);
        }
    }

    /** A client: a CuratorFramework of its own, through its proxy. */
    final class Client extends ClientBase {
        final CuratorFramework curator;

        Client(int index, String address) {
            super(index, address);
            curator = CuratorFrameworkFactory.builder()
                    .connectString(address)
                    .sessionTimeoutMs((int) SESSION_TIMEOUT_MS)
                    .connectionTimeoutMs((int) Math.max(1000, SESSION_TIMEOUT_MS))
                    .retryPolicy(new ExponentialBackoffRetry(50, 10, 1000))
                    .build();
        }

        void start() throws Exception {
            curator.start();
            if (!curator.blockUntilConnected((int) CONNECT_MS, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("client " + index + " did not connect in " + CONNECT_MS + " ms");
            }
        }

        ZooKeeper zk() throws Exception {
            return curator.getZookeeperClient().getZooKeeper();
        }

        boolean alive() {
            return curator.getZookeeperClient().isConnected();
        }

        void close() {
            curator.close();
        }

        ScriptLock makeLock() {
            if (KIND.equals("leader-latch")) return makeLatch(curator);
            boolean reader = READERS > index;
            InterProcessLock l = switch (KIND) {
                case "semaphore-mutex" -> new InterProcessSemaphoreMutex(curator, LOCK_PATH);
                case "rw" -> reader ? new InterProcessReadWriteLock(curator, LOCK_PATH).readLock()
                        : new InterProcessReadWriteLock(curator, LOCK_PATH).writeLock();
                default -> new InterProcessMutex(curator, LOCK_PATH);
            };
            String name = switch (KIND) {
                case "semaphore-mutex" -> "InterProcessSemaphoreMutex.acquire()";
                case "rw" -> reader ? "InterProcessReadWriteLock.readLock().acquire()"
                        : "InterProcessReadWriteLock.writeLock().acquire()";
                default -> "InterProcessMutex.acquire()";
            };
            return new ScriptLock() {
                public boolean acquire(long timeoutMs) throws Exception {
                    if (timeoutMs < 0) {
                        l.acquire();
                        return true;
                    }
                    return l.acquire(timeoutMs, TimeUnit.MILLISECONDS);
                }

                public void release() throws Exception {
                    l.release();
                }

                /** The node of the last acquire: Curator keeps it private, so it is read by reflection. */
                public String node() {
                    try {
                        if (l instanceof InterProcessMutex) {
                            Method m = InterProcessMutex.class.getDeclaredMethod("getLockPath");
                            m.setAccessible(true);
                            return (String) m.invoke(l);
                        }
                        Field f = InterProcessSemaphoreMutex.class.getDeclaredField("lease");
                        f.setAccessible(true);
                        Lease lease = (Lease) f.get(l);
                        // InterProcessSemaphoreV2 keeps its leases under <path>/leases.
                        return lease == null ? null : LOCK_PATH + "/leases/" + lease.getNodeName();
                    } catch (ReflectiveOperationException e) {
                        return null;
                    }
                }

                public String name() {
                    return name;
                }
            };
        }
    }

    /**
     * A LeaderLatch driven as a lock: an acquire starts a new latch (one starts only once)
     * and awaits leadership, a hold is a term of leadership, the release closes the latch.
     * A latch that does not lead is closed.
     */
    ScriptLock makeLatch(CuratorFramework curator) {
        return new ScriptLock() {
            volatile LeaderLatch latch;

            public boolean acquire(long timeoutMs) throws Exception {
                LeaderLatch l = new LeaderLatch(curator, LOCK_PATH, "repro");
                latch = l;
                boolean led = false;
                try {
                    l.start();
                    if (timeoutMs < 0) {
                        l.await();
                        led = true;
                    } else {
                        led = l.await(timeoutMs, TimeUnit.MILLISECONDS);
                    }
                    return led;
                } finally {
                    if (!led) {
                        try {
                            l.close();
                        } catch (Exception e) {
                            // closed already
                        }
                    }
                }
            }

            public void release() throws Exception {
                latch.close();
            }

            /** The latch's node (its getOurPath()), kept after it was closed. */
            public String node() {
                LeaderLatch l = latch;
                return l == null ? null : l.getOurPath();
            }

            public String name() {
                return "LeaderLatch.await()";
            }
        };
    }

    static String versions() {
        return String.format("Curator %s, ZooKeeper %s, Java %s", jarVersion(CuratorFramework.class),
                org.apache.zookeeper.Version.getFullVersion().split("[-,]")[0], System.getProperty("java.version"));
    }
}
