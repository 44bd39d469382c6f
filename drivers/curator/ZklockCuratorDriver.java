// zklock's driver for Apache Curator's locks: speaks zklock's lock-under-test protocol
// (version 3, docs/drivers.md) on stdin/stdout, one JSON object a line.
//
// usage: java -cp <curator jars>:<dir> ZklockCuratorDriver KIND CONNECT LOCK_PATH SESSION_TIMEOUT_MS
// KIND: mutex | read | write | semaphore-mutex (InterProcessMutex, the read or write side
// of InterProcessReadWriteLock, InterProcessSemaphoreMutex), or leader-latch |
// leader-selector (LeaderLatch, LeaderSelector: each hold a term of leadership, see
// LatchTerms and SelectorTerms)
//    or: java -XX:ArchiveClassesAtExit=FILE -cp ... ZklockCuratorDriver train
// runs the classes a driver loads without a server and exits, so that the JVM archives
// them: every later driver maps the archive instead of loading them again, which halves
// a JVM's start (zklock runs several drivers a run).
//
// zklock compiles it with javac against Debian's Curator jars on first use. Each request
// runs on a thread of its own, so that a cancel (an interrupt) reaches a blocking acquire.
// A reset closes the session and waits for an open, which starts the next one in the same
// JVM (zklock keeps processes between a search's runs: a JVM's start is most of a run's CPU).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;

public final class ZklockCuratorDriver {
    static final int PROTOCOL = 3;
    // How long a reset waits for the old session's requests to end; past it the JVM exits.
    static final long RESET_JOIN_MS = 3_000;
    static final int LINE_BYTES_MAX = 65536;
    static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    final String kind;
    final String path;
    final CuratorFramework client;
    // Replaced by an acquire that asks for a fresh lock object, on the owner thread.
    volatile InterProcessLock lock;
    // Curator's locks belong to the thread that took them (a release from another thread
    // is refused), so every acquire and release runs on this one thread, in order.
    final ExecutorService owner = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "zklock-lock-owner");
        t.setDaemon(true);
        return t;
    });
    volatile Thread ownerThread;
    // The acquire sent and not yet ended, if any, and whether the owner thread has started
    // it; a cancel that comes before it starts is kept in `cancelEarly` (guarded by `this`).
    Long acquiring = null;
    boolean started = false;
    boolean cancelEarly = false;
    // The acquire whose hold is current, and whether its loss was reported.
    Long holding = null;
    boolean lostSent = false;
    // Set by a reset: the old session's listener reports nothing more.
    volatile boolean closed = false;

    ZklockCuratorDriver(String kind, String connect, String path, int sessionTimeoutMs) {
        this(kind, path, CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(sessionTimeoutMs)
                .connectionTimeoutMs(Math.max(1000, sessionTimeoutMs))
                .retryPolicy(new ExponentialBackoffRetry(50, 10, 1000))
                .build());
    }

    ZklockCuratorDriver(String kind, String path, CuratorFramework client) {
        this(kind, path, client, lockOf(kind, client, path));
    }

    /** With any lock: the driver's tests give it a stand-in. */
    ZklockCuratorDriver(String kind, String path, CuratorFramework client, InterProcessLock lock) {
        this.kind = kind;
        this.path = path;
        this.client = client;
        this.lock = bound(lock);
        client.getConnectionStateListenable().addListener((c, state) -> onState(state));
    }

    /** `lock`, a term's end reported as the hold's loss when it is an election's. */
    InterProcessLock bound(InterProcessLock lock) {
        if (lock instanceof Terms) ((Terms) lock).onLost = this::lostHold;
        return lock;
    }

    static InterProcessLock lockOf(String kind, CuratorFramework client, String path) {
        switch (kind) {
            case "mutex": return new InterProcessMutex(client, path);
            case "read": return new InterProcessReadWriteLock(client, path).readLock();
            case "write": return new InterProcessReadWriteLock(client, path).writeLock();
            case "semaphore-mutex": return new InterProcessSemaphoreMutex(client, path);
            case "leader-latch": return new LatchTerms(client, path);
            case "leader-selector": return new SelectorTerms(client, path);
            default: throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    long sessionId() {
        try {
            return client.getZookeeperClient().getZooKeeper().getSessionId();
        } catch (Exception e) {
            return 0;
        }
    }

    void onState(ConnectionState state) {
        if (closed) return;
        String name;
        switch (state) {
            case CONNECTED: case RECONNECTED: name = "connected"; break;
            case SUSPENDED: name = "disconnected"; break;
            case LOST: name = "expired"; break;
            default: return; // READ_ONLY: not used here
        }
        emit(obj("event", "session", "state", name, "session_id", sessionId()));
        if (name.equals("connected")) return;
        // Curator's advice: a holder must stop trusting its lock on SUSPENDED and LOST.
        lostHold("curator state " + state);
    }

    /** Reports the current hold lost, once. */
    void lostHold(String reason) {
        if (closed) return;
        Long hold;
        synchronized (this) {
            hold = lostSent ? null : holding;
            if (hold != null) lostSent = true;
        }
        if (hold != null) emit(obj("event", "lost", "id", hold, "reason", reason));
    }

    /** The node of the hold just taken: Curator keeps it private, so it is read by reflection. */
    String heldNode() throws Exception {
        if (lock instanceof Terms) return ((Terms) lock).node();
        if (lock instanceof InterProcessMutex) return mutexNode((InterProcessMutex) lock);
        Field f = InterProcessSemaphoreMutex.class.getDeclaredField("lease");
        f.setAccessible(true);
        Lease lease = (Lease) f.get(lock);
        // InterProcessSemaphoreV2 keeps its leases under <path>/leases.
        return lease == null ? null : path + "/leases/" + lease.getNodeName();
    }

    static String mutexNode(InterProcessMutex mutex) throws Exception {
        Method m = InterProcessMutex.class.getDeclaredMethod("getLockPath");
        m.setAccessible(true);
        return (String) m.invoke(mutex);
    }

    /** On the reading thread, before the acquire is handed to the owner thread. */
    synchronized void sent(long id) {
        acquiring = id;
        started = false;
        cancelEarly = false;
    }

    void acquire(long id, String mode, long timeoutMs) {
        acquire(id, mode, timeoutMs, false);
    }

    void acquire(long id, String mode, long timeoutMs, boolean fresh) {
        if (fresh) {
            // A new object for this acquire and the next ones; the old one is dropped with
            // whatever it left behind (zklock settles an acquire before it sends the next).
            lock = bound(lockOf(kind, client, path));
        }
        synchronized (this) {
            Thread.interrupted(); // a cancel that came too late for an earlier acquire
            ownerThread = Thread.currentThread();
            started = true;
            if (cancelEarly && acquiring != null && acquiring == id) {
                acquiring = null;
                emit(obj("event", "not_acquired", "id", id, "reason", "cancelled"));
                return;
            }
        }
        try {
            boolean got;
            switch (mode) {
                case "blocking": lock.acquire(); got = true; break;
                case "try": got = lock.acquire(0, TimeUnit.MILLISECONDS); break;
                default: got = lock.acquire(timeoutMs, TimeUnit.MILLISECONDS); break;
            }
            if (!got) {
                emit(obj("event", "not_acquired", "id", id, "reason", mode.equals("try") ? "held" : "timeout"));
                return;
            }
            // Held: a cancel from now on comes too late, and must not interrupt the reading
            // of the token (that would report a held lock as not acquired).
            synchronized (this) {
                if (acquiring != null && acquiring == id) acquiring = null;
                Thread.interrupted();
            }
            String node = heldNode();
            Stat stat = null;
            try {
                // No node, no stat: the token is -1, a grant the checker judges. Read on the
                // session's own handle, without Curator's retries: a retry after an expiry
                // reads on a new session, which finds the old session's node gone and would
                // judge a loss that came after the grant as a grant on a gone node.
                stat = node == null ? null : client.getZookeeperClient().getZooKeeper().exists(node, false);
            } catch (Exception e) {
                // Held, but the token cannot be read: the hold is given back and the acquire
                // reported as failed, rather than reported without a token.
                try {
                    lock.release();
                } catch (Exception again) {
                    // Curator keeps what it keeps; its next acquire says so.
                }
                emit(obj("event", "error", "id", id, "message",
                        "acquired, but its token could not be read (" + e + "); released"));
                return;
            }
            synchronized (this) {
                holding = id;
                lostSent = false;
            }
            emit(obj("event", "acquired", "id", id, "token", stat == null ? -1L : stat.getCzxid(),
                    "node", node == null ? "" : node.substring(node.lastIndexOf('/') + 1)));
            // A term that ended before it was reported (its loss found no hold to end).
            if (lock instanceof Terms && !lock.isAcquiredInThisProcess()) {
                lostHold("the term ended before it was reported");
            }
        } catch (InterruptedException e) {
            emit(obj("event", "not_acquired", "id", id, "reason", "cancelled"));
        } catch (Exception e) {
            if (Thread.currentThread().isInterrupted() || e.getCause() instanceof InterruptedException) {
                emit(obj("event", "not_acquired", "id", id, "reason", "cancelled: " + e));
            } else {
                emit(obj("event", "error", "id", id, "message", e.toString()));
            }
        } finally {
            synchronized (this) {
                // The next acquire may have been sent already: it is not this one's to end.
                if (acquiring != null && acquiring == id) acquiring = null;
                Thread.interrupted();
            }
        }
    }

    synchronized void cancel(long id) {
        if (acquiring == null || acquiring != id) return;
        if (started) {
            ownerThread.interrupt();
        } else {
            cancelEarly = true;
        }
    }

    void release(long id) {
        try {
            synchronized (this) {
                holding = null;
            }
            lock.release();
            emit(obj("event", "released", "id", id));
        } catch (Exception e) {
            emit(obj("event", "error", "id", id, "message", e.toString()));
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("train")) {
            train();
            System.exit(0);
        }
        if (args.length != 4) {
            System.err.println("usage: ZklockCuratorDriver KIND CONNECT LOCK_PATH SESSION_TIMEOUT_MS");
            System.exit(2);
        }
        ZklockCuratorDriver d = open(args[0], args[1], args[2], Integer.parseInt(args[3]));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.length() > LINE_BYTES_MAX) {
                emit(obj("event", "error", "id", null, "message", "request line longer than " + LINE_BYTES_MAX + " bytes"));
                continue;
            }
            Map<String, Object> req;
            try {
                req = Json.parse(line);
            } catch (RuntimeException e) {
                emit(obj("event", "error", "id", null, "message", "bad request: " + e.getMessage()));
                continue;
            }
            Object op = req.get("op");
            Long id = req.get("id") instanceof Long ? (Long) req.get("id") : null;
            if ("close".equals(op)) break;
            if ("reset".equals(op)) {
                if (d != null && !d.reset()) {
                    // A request of the old session is stuck: this JVM cannot be trusted
                    // with another; zklock sees it exit and starts a new one.
                    OUT.flush();
                    System.exit(0);
                }
                d = null;
                emit(obj("event", "reset"));
                continue;
            }
            if ("open".equals(op)) {
                if (d != null) {
                    emit(obj("event", "error", "id", null, "message", "open without a reset before it"));
                    continue;
                }
                Object kind = req.get("kind"), connect = req.get("connect"), lockPath = req.get("lock_path");
                Object timeout = req.get("session_timeout_ms");
                if (!(kind instanceof String) || !(connect instanceof String) || !(lockPath instanceof String)
                        || !(timeout instanceof Long)) {
                    emit(obj("event", "error", "id", null, "message", "bad open: " + line));
                    continue;
                }
                d = open((String) kind, (String) connect, (String) lockPath, (int) (long) (Long) timeout);
                continue;
            }
            if (d == null) {
                emit(obj("event", "error", "id", id, "message", "no session: " + op + " after a reset, before an open"));
                continue;
            }
            if (id == null) {
                emit(obj("event", "error", "id", null, "message", "request without an id: " + line));
                continue;
            }
            if ("acquire".equals(op)) {
                String mode = String.valueOf(req.getOrDefault("mode", "blocking"));
                long timeoutMs = req.get("timeout_ms") instanceof Long ? (Long) req.get("timeout_ms") : 0L;
                Object object = req.getOrDefault("object", "same");
                if (!"same".equals(object) && !"fresh".equals(object)) {
                    emit(obj("event", "error", "id", id, "message", "bad acquire: object " + object));
                    continue;
                }
                boolean fresh = "fresh".equals(object);
                ZklockCuratorDriver on = d;
                on.sent(id);
                on.owner.execute(() -> on.acquire(id, mode, timeoutMs, fresh));
            } else if ("release".equals(op)) {
                ZklockCuratorDriver on = d;
                on.owner.execute(() -> on.release(id));
            } else if ("cancel".equals(op)) {
                d.cancel(id);
            } else {
                emit(obj("event", "error", "id", id, "message", "unknown op " + op));
            }
        }
        if (d != null) d.client.close();
        OUT.flush();
        System.exit(0);
    }

    /** A driver with its session connected and its hello sent. */
    static ZklockCuratorDriver open(String kind, String connect, String path, int sessionTimeoutMs)
            throws InterruptedException {
        ZklockCuratorDriver d = new ZklockCuratorDriver(kind, connect, path, sessionTimeoutMs);
        d.client.start();
        d.client.blockUntilConnected(Math.max(10_000, sessionTimeoutMs), TimeUnit.MILLISECONDS);
        String version = curatorVersion();
        emit(obj("event", "hello", "protocol", (long) PROTOCOL, "library", "curator",
                "version", version == null ? "unknown" : version,
                "lock", d.lock instanceof Terms ? ((Terms) d.lock).library()
                        : d.lock.getClass().getSimpleName(), "session_id", d.sessionId()));
        return d;
    }

    /**
     * Closes the session and waits for its requests to end (an acquire still waiting is
     * interrupted), so that nothing of it is reported after the reset's answer; false
     * when one is stuck.
     */
    boolean reset() throws InterruptedException {
        closed = true;
        if (lock instanceof Terms) ((Terms) lock).abandon();
        client.close();
        owner.shutdownNow();
        return owner.awaitTermination(RESET_JOIN_MS, TimeUnit.MILLISECONDS);
    }

    /**
     * Goes through what a driver loads, offline: a client that cannot connect (a port
     * nothing listens on, in bounded time), each lock kind's acquire failing on it, the
     * protocol's parsing and reports (into nothing).
     */
    static void train() {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString("127.0.0.1:1")
                .sessionTimeoutMs(1000)
                .connectionTimeoutMs(100)
                .retryPolicy(new ExponentialBackoffRetry(1, 0, 1))
                .build();
        client.start();
        for (String kind : new String[] {"mutex", "read", "write", "semaphore-mutex", "leader-latch",
                "leader-selector"}) {
            ZklockCuratorDriver d = new ZklockCuratorDriver(kind, "/zklock/train", client);
            d.sent(1);
            d.acquire(1, "timed", 100, false);
            d.cancel(1);
            d.release(1);
            d.onState(ConnectionState.SUSPENDED);
        }
        Json.parse("{\"op\":\"acquire\",\"id\":1,\"mode\":\"timed\",\"timeout_ms\":3000,\"object\":\"same\"}");
        curatorVersion();
        client.close();
    }

    /** Curator's version: its manifest's, else its jar's name (Debian's links name it). */
    static String curatorVersion() {
        String v = CuratorFramework.class.getPackage().getImplementationVersion();
        if (v != null) return v;
        try {
            java.nio.file.Path jar = java.nio.file.Paths.get(
                    CuratorFramework.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            String name = jar.toRealPath().getFileName().toString();
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("-([0-9][^/]*)\\.jar$").matcher(name);
            if (m.find()) return m.group(1);
            // Debian's unversioned link is a file of its own on some systems: the versioned
            // jar beside it names the version.
            try (java.nio.file.DirectoryStream<java.nio.file.Path> dir =
                    java.nio.file.Files.newDirectoryStream(jar.getParent(), "curator-framework-*.jar")) {
                for (java.nio.file.Path p : dir) {
                    java.util.regex.Matcher mv = java.util.regex.Pattern.compile("-([0-9][^/]*)\\.jar$")
                            .matcher(p.getFileName().toString());
                    if (mv.find()) return mv.group(1);
                }
            }
            return name;
        } catch (Exception e) {
            return "unknown";
        }
    }

    /**
     * A leader election driven as a lock: an acquire joins the election and waits to
     * lead, a hold is a term of leadership, and the release leaves the election (the next
     * acquire joins anew). A term's end the library tells of (a listener, an interrupt)
     * is the hold's loss.
     */
    abstract static class Terms implements InterProcessLock {
        final CuratorFramework client;
        final String path;
        volatile Consumer<String> onLost = reason -> { };

        Terms(CuratorFramework client, String path) {
            this.client = client;
            this.path = path;
        }

        /** The recipe's name, for the hello. */
        abstract String library();

        /** The term's node (its full path), or null. */
        abstract String node() throws Exception;

        /** Ends a term without a word (a reset: the session closes next). */
        void abandon() { }

        @Override
        public void acquire() throws Exception {
            if (!acquire(-1, null)) throw new IllegalStateException("left the election without leading");
        }
    }

    /**
     * LeaderLatch: an acquire starts a new latch and awaits leadership (timed: await with
     * a timeout; a try: await of no time), closing the latch when it does not lead; the
     * release closes it. Its listener's notLeader ends the term.
     */
    static final class LatchTerms extends Terms {
        volatile LeaderLatch latch;

        LatchTerms(CuratorFramework client, String path) {
            super(client, path);
        }

        String library() {
            return "LeaderLatch";
        }

        @Override
        public boolean acquire(long time, TimeUnit unit) throws Exception {
            LeaderLatch l = new LeaderLatch(client, path, "zklock-driver");
            l.addListener(new LeaderLatchListener() {
                public void isLeader() { }
                public void notLeader() {
                    onLost.accept("curator LeaderLatch: notLeader");
                }
            });
            latch = l;
            boolean led = false;
            try {
                l.start();
                if (unit == null) {
                    l.await();
                    led = true;
                } else {
                    led = l.await(time, unit);
                }
                return led;
            } finally {
                if (!led) {
                    latch = null;
                    closeQuietly(l);
                }
            }
        }

        @Override
        public void release() throws Exception {
            LeaderLatch l = latch;
            latch = null;
            if (l == null) throw new IllegalStateException("not in the election");
            l.close();
        }

        @Override
        public boolean isAcquiredInThisProcess() {
            LeaderLatch l = latch;
            return l != null && l.hasLeadership();
        }

        String node() {
            LeaderLatch l = latch;
            return l == null ? null : l.getOurPath();
        }

        static void closeQuietly(LeaderLatch l) {
            try {
                l.close();
            } catch (Exception e) {
                // not started, or closed already
            }
        }
    }

    /**
     * LeaderSelector: an acquire starts a new selector, auto-requeued as Curator advises,
     * and waits until its takeLeadership is called (timed: at most its timeout, then the
     * selector is closed); the term lasts until the release, which returns from
     * takeLeadership and then closes the selector (so its requeue races its close). Curator's LeaderSelectorListenerAdapter cancels the term on SUSPENDED and
     * LOST by interrupting takeLeadership, which ends the term.
     */
    static final class SelectorTerms extends Terms {
        volatile LeaderSelector selector;
        volatile CountDownLatch go;
        // The term's node: InterProcessMutex keeps it per thread, so it is read on the
        // selector's own thread, in takeLeadership.
        volatile String node;

        SelectorTerms(CuratorFramework client, String path) {
            super(client, path);
        }

        String library() {
            return "LeaderSelector";
        }

        @Override
        public boolean acquire(long time, TimeUnit unit) throws Exception {
            CountDownLatch led = new CountDownLatch(1), giveUp = new CountDownLatch(1);
            LeaderSelector[] holder = new LeaderSelector[1];
            node = null;
            LeaderSelector s = new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
                public void takeLeadership(CuratorFramework c) throws Exception {
                    node = termNode(holder[0]);
                    led.countDown();
                    try {
                        giveUp.await();
                    } catch (InterruptedException e) {
                        if (giveUp.getCount() > 0) onLost.accept("curator LeaderSelector: takeLeadership interrupted");
                        throw e;
                    }
                }
            });
            // Curator's advice: without it, a connection loss while queued ends the
            // selector's contention without a word (its task ends on the exception).
            s.autoRequeue();
            holder[0] = s;
            boolean got = false;
            try {
                s.start();
                if (unit == null) {
                    led.await();
                    got = true;
                } else {
                    got = led.await(time, unit);
                }
            } finally {
                if (!got) s.close();
            }
            if (got) {
                selector = s;
                go = giveUp;
            }
            return got;
        }

        @Override
        public void release() throws Exception {
            LeaderSelector s = selector;
            CountDownLatch g = go;
            selector = null;
            if (s == null) throw new IllegalStateException("not in the election");
            g.countDown();
            s.close();
        }

        @Override
        void abandon() {
            CountDownLatch g = go;
            if (g != null) g.countDown();
        }

        @Override
        public boolean isAcquiredInThisProcess() {
            LeaderSelector s = selector;
            return s != null && s.hasLeadership();
        }

        String node() {
            return selector == null ? null : node;
        }

        /** On the selector's thread: the node of the mutex it leads by, or null. */
        static String termNode(LeaderSelector s) {
            try {
                Field f = LeaderSelector.class.getDeclaredField("mutex");
                f.setAccessible(true);
                return mutexNode((InterProcessMutex) f.get(s));
            } catch (Exception e) {
                return null;
            }
        }
    }

    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    static void emit(Map<String, Object> m) {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (b.length() > 1) b.append(',');
            Json.string(b, e.getKey());
            b.append(':');
            Object v = e.getValue();
            if (v == null) b.append("null");
            else if (v instanceof Long || v instanceof Integer) b.append(v);
            else Json.string(b, String.valueOf(v));
        }
        b.append('}');
        synchronized (OUT) {
            OUT.println(b);
            OUT.flush();
        }
    }

    /** Just enough JSON for the protocol's requests: one flat object of strings, integers and null. */
    static final class Json {
        static void string(StringBuilder b, String s) {
            b.append('"');
            for (char c : s.toCharArray()) {
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            b.append('"');
        }

        static Map<String, Object> parse(String s) {
            int[] at = {skip(s, 0)};
            expect(s, at, '{');
            Map<String, Object> m = new LinkedHashMap<>();
            at[0] = skip(s, at[0]);
            if (peek(s, at) == '}') { at[0]++; return end(s, at, m); }
            while (true) {
                at[0] = skip(s, at[0]);
                String key = str(s, at);
                at[0] = skip(s, at[0]);
                expect(s, at, ':');
                at[0] = skip(s, at[0]);
                m.put(key, value(s, at));
                at[0] = skip(s, at[0]);
                char c = peek(s, at);
                at[0]++;
                if (c == '}') return end(s, at, m);
                if (c != ',') throw new RuntimeException("expected , or } at " + (at[0] - 1));
            }
        }

        static Map<String, Object> end(String s, int[] at, Map<String, Object> m) {
            if (skip(s, at[0]) != s.length()) throw new RuntimeException("trailing characters");
            return m;
        }

        static Object value(String s, int[] at) {
            char c = peek(s, at);
            if (c == '"') return str(s, at);
            if (s.startsWith("null", at[0])) { at[0] += 4; return null; }
            int start = at[0];
            if (c == '-') at[0]++;
            while (at[0] < s.length() && Character.isDigit(s.charAt(at[0]))) at[0]++;
            if (start == at[0]) throw new RuntimeException("unexpected " + c + " at " + start);
            try {
                return Long.parseLong(s.substring(start, at[0]));
            } catch (NumberFormatException e) {
                throw new RuntimeException("bad number at " + start);
            }
        }

        static String str(String s, int[] at) {
            expect(s, at, '"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = peek(s, at);
                at[0]++;
                if (c == '"') return b.toString();
                if (c == '\\') {
                    char e = peek(s, at);
                    at[0]++;
                    switch (e) {
                        case 'n': b.append('\n'); break;
                        case 't': b.append('\t'); break;
                        case 'r': b.append('\r'); break;
                        case 'b': b.append('\b'); break;
                        case 'f': b.append('\f'); break;
                        case 'u':
                            if (at[0] + 4 > s.length()) throw new RuntimeException("bad escape");
                            b.append((char) Integer.parseInt(s.substring(at[0], at[0] + 4), 16));
                            at[0] += 4;
                            break;
                        default: b.append(e);
                    }
                } else {
                    b.append(c);
                }
            }
        }

        static char peek(String s, int[] at) {
            if (at[0] >= s.length()) throw new RuntimeException("unexpected end of line");
            return s.charAt(at[0]);
        }

        static void expect(String s, int[] at, char c) {
            if (peek(s, at) != c) throw new RuntimeException("expected " + c + " at " + at[0]);
            at[0]++;
        }

        static int skip(String s, int i) {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
            return i;
        }
    }
}
