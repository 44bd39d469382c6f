// zklock's driver for ZooKeeper's own contrib lock, org.apache.zookeeper.recipes.lock.WriteLock
// (zookeeper-recipes-lock, Debian's libzookeeper-java): speaks zklock's lock-under-test
// protocol (version 3, docs/drivers.md) on stdin/stdout, one JSON object a line.
//
// usage: java -cp <zookeeper jars>:<dir> ZklockZookeeperDriver writelock CONNECT LOCK_PATH SESSION_TIMEOUT_MS
//    or: java -XX:ArchiveClassesAtExit=FILE -cp ... ZklockZookeeperDriver train
// (the second runs the classes a driver loads without a server and exits, so that the JVM
// archives them for every later driver's start).
//
// WriteLock's lock() only starts an acquire: it returns whether the lock is held now, and
// otherwise calls its LockListener's lockAcquired() once it is. A blocking or timed acquire
// here is that call and a wait for the callback, as a BlockingWriteLock over WriteLock
// does; a try is one lock() call. Every acquire that does not end held calls unlock() to
// withdraw its node, as a careful caller does (WriteLock's unlock() "removes your request in
// the queue for locking"). WriteLock itself never says that a hold is lost: its isOwner()
// stays true after the session is gone, and no callback comes. The loss is learnt, as a user
// of it must, from the ZooKeeper handle's own watcher (Disconnected, Expired). After an
// expiry the handle is dead for good, so the driver opens a new one and a new WriteLock on it,
// as its user must.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.recipes.lock.LockListener;
import org.apache.zookeeper.recipes.lock.WriteLock;

public final class ZklockZookeeperDriver {
    static final int PROTOCOL = 3;
    // How long a reset waits for the old session's requests to end; past it the JVM exits.
    static final long RESET_JOIN_MS = 3_000;
    static final int LINE_BYTES_MAX = 65536;
    static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    final String connect;
    final String path;
    final int sessionTimeoutMs;
    // The current handle and its lock object: replaced after an expiry (the handle is dead
    // then) and, the lock object alone, by an acquire that asks for a fresh one.
    volatile ZooKeeper zk;
    volatile WriteLock lock;
    // How many handles were made (the current one's number), and the current one's watcher.
    volatile long handles = 0;
    volatile SessionWatcher watcher;
    // Every acquire and release runs on this one thread, in order (zklock settles an acquire
    // before it sends the next), so that a cancel interrupts the one acquire it names.
    final ExecutorService owner = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "zklock-lock-owner");
        t.setDaemon(true);
        return t;
    });
    volatile Thread ownerThread;
    // Guarded by `this`: the acquire sent and not yet ended, whether the owner thread has
    // started it, a cancel that came before it started; the acquire waiting for its
    // lockAcquired callback; the acquire whose hold is current, its lock object, and whether
    // its loss was reported.
    Long acquiring = null;
    boolean started = false;
    boolean cancelEarly = false;
    Waiter waiter = null;
    Long holding = null;
    WriteLock heldBy = null;
    boolean lostSent = false;
    // Set by a reset: the old session's watcher reports nothing more.
    volatile boolean closed = false;
    // Whether the lock directory's parents are known to exist (the owner thread's).
    boolean parentsMade = false;

    /** An acquire waiting for lockAcquired() of its lock object, or for its session's end. */
    static final class Waiter {
        final WriteLock lock;
        boolean acquired = false;
        boolean expired = false;
        // A cancel came: WriteLock swallows some interrupts (ensurePathExists, its retries'
        // sleeps), so the wait looks at this too.
        boolean cancelled = false;

        Waiter(WriteLock lock) {
            this.lock = lock;
        }
    }

    /** The listener of one lock object: lockAcquired() wakes the acquire that waits on it. */
    final class Listener implements LockListener {
        WriteLock of;

        public void lockAcquired() {
            synchronized (ZklockZookeeperDriver.this) {
                Waiter w = waiter;
                if (w != null && w.lock == of) w.acquired = true;
                ZklockZookeeperDriver.this.notifyAll();
            }
        }

        public void lockReleased() {}
    }

    /** The watcher of one handle: session changes, reported while the handle is current. */
    final class SessionWatcher implements Watcher {
        // The handle's number: reports come from the current one only.
        final long generation = handles;
        final CountDownLatch connected = new CountDownLatch(1);

        public void process(WatchedEvent event) {
            if (event.getType() != Event.EventType.None) return;
            switch (event.getState()) {
                case SyncConnected:
                    connected.countDown();
                    if (current()) emit(obj("event", "session", "state", "connected", "session_id", sessionId()));
                    break;
                case Disconnected:
                    if (current()) lose("disconnected", "zookeeper session event Disconnected");
                    break;
                case Expired:
                    if (current()) {
                        lose("expired", "zookeeper session event Expired");
                        renew();
                    }
                    break;
                default:
                    break; // AuthFailed, SaslAuthenticated, ConnectedReadOnly, Closed: not used here
            }
        }

        boolean current() {
            return !closed && generation == handles;
        }
    }

    ZklockZookeeperDriver(String connect, String path, int sessionTimeoutMs) throws Exception {
        this.connect = connect;
        this.path = path;
        this.sessionTimeoutMs = sessionTimeoutMs;
        this.zk = handle();
        this.lock = lockOn(zk);
    }

    /** A new handle, connecting in the background. */
    ZooKeeper handle() throws Exception {
        handles++;
        SessionWatcher w = new SessionWatcher();
        watcher = w;
        return new ZooKeeper(connect, sessionTimeoutMs, w);
    }

    WriteLock lockOn(ZooKeeper z) {
        Listener l = new Listener();
        WriteLock w = new WriteLock(z, path, null, l);
        l.of = w;
        return w;
    }

    long sessionId() {
        ZooKeeper z = zk;
        return z == null ? 0 : z.getSessionId();
    }

    /** The session is disconnected or gone: reported, with the loss of the current hold. */
    void lose(String state, String reason) {
        emit(obj("event", "session", "state", state, "session_id", sessionId()));
        Long hold;
        synchronized (this) {
            hold = lostSent ? null : holding;
            if (hold != null) lostSent = true;
        }
        if (hold != null) emit(obj("event", "lost", "id", hold, "reason", reason));
    }

    /**
     * After an expiry: the old handle is dead for good, so a new one and a new lock object
     * on it, as WriteLock's user must make; an acquire waiting on the old one ends.
     */
    void renew() {
        WriteLock old = lock;
        ZooKeeper dead = zk;
        try {
            zk = handle();
            lock = lockOn(zk);
        } catch (Exception e) {
            emit(obj("event", "error", "id", null, "message", "no new session after an expiry: " + e));
        }
        old.close();
        synchronized (this) {
            if (waiter != null && waiter.lock == old) waiter.expired = true;
            notifyAll();
        }
        try {
            dead.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** On the reading thread, before the acquire is handed to the owner thread. */
    synchronized void sent(long id) {
        acquiring = id;
        started = false;
        cancelEarly = false;
    }

    /** From here on a cancel does not interrupt the owner thread (and one already sent is cleared). */
    synchronized void settled(long id) {
        if (acquiring != null && acquiring == id) acquiring = null;
        waiter = null;
        Thread.interrupted();
    }

    void acquire(long id, String mode, long timeoutMs, boolean fresh) {
        if (fresh) {
            // A new object for this acquire and the next ones, on the same handle: the old
            // one is dropped with whatever it left behind.
            lock = lockOn(zk);
        }
        WriteLock l = lock;
        Waiter w = new Waiter(l);
        makeParents(l.getZookeeper());
        synchronized (this) {
            Thread.interrupted(); // a cancel that came too late for an earlier acquire
            ownerThread = Thread.currentThread();
            started = true;
            if (cancelEarly && acquiring != null && acquiring == id) {
                acquiring = null;
                emit(obj("event", "not_acquired", "id", id, "reason", "cancelled"));
                return;
            }
            waiter = w;
        }
        try {
            boolean got = l.lock() || l.isOwner();
            if (!got && mode.equals("try")) {
                settled(id);
                withdraw(l, id, "not_acquired", "held");
                return;
            }
            if (!got) {
                long deadline = mode.equals("timed") ? System.nanoTime() + timeoutMs * 1_000_000L : Long.MAX_VALUE;
                boolean expired;
                synchronized (this) {
                    while (!w.acquired && !w.expired) {
                        if (w.cancelled) throw new InterruptedException("cancelled");
                        long left = deadline - System.nanoTime();
                        if (left <= 0) break;
                        long ms = Math.max(1, left / 1_000_000L);
                        wait(deadline == Long.MAX_VALUE ? 0 : ms);
                    }
                    got = w.acquired;
                    expired = w.expired;
                }
                if (!got) {
                    settled(id);
                    if (expired) {
                        emit(obj("event", "error", "id", id, "message", "the session expired while the acquire waited"));
                    } else {
                        withdraw(l, id, "not_acquired", "timeout");
                    }
                    return;
                }
            }
            // Held: a cancel from now on comes too late, and must not interrupt the reading
            // of the token (that would report a held lock as not acquired).
            settled(id);
            String node = nodePath(l);
            Stat stat;
            try {
                // No node, no stat: the token is -1, a grant the checker judges.
                stat = node == null ? null : l.getZookeeper().exists(node, false);
            } catch (Exception e) {
                // Held, but the token cannot be read: the hold is given back and the acquire
                // reported as failed, rather than reported without a token.
                withdraw(l, id, "error", "acquired, but its token could not be read (" + e + "); released");
                return;
            }
            synchronized (this) {
                holding = id;
                heldBy = l;
                lostSent = false;
            }
            emit(obj("event", "acquired", "id", id, "token", stat == null ? -1L : stat.getCzxid(),
                    "node", node == null ? "" : node.substring(node.lastIndexOf('/') + 1)));
        } catch (InterruptedException e) {
            settled(id);
            withdraw(l, id, "not_acquired", "cancelled");
        } catch (KeeperException | RuntimeException e) {
            settled(id);
            withdraw(l, id, "error", e.toString());
        } finally {
            settled(id);
        }
    }

    /**
     * WriteLock makes its directory but not the directory's parents (ensurePathExists
     * creates the one node): its user makes them, as here, once a session. A failure is
     * left to lock(), which then reports NoNode.
     */
    void makeParents(ZooKeeper z) {
        if (parentsMade) return;
        try {
            for (int at = path.indexOf('/', 1); at > 0; at = path.indexOf('/', at + 1)) {
                try {
                    z.create(path.substring(0, at), new byte[0],
                            org.apache.zookeeper.ZooDefs.Ids.OPEN_ACL_UNSAFE,
                            org.apache.zookeeper.CreateMode.PERSISTENT);
                } catch (KeeperException.NodeExistsException e) {
                    // made by another client, or by this one before a lost reply
                }
            }
            parentsMade = true;
        } catch (KeeperException | InterruptedException e) {
            Thread.interrupted(); // a cancel too late for an earlier acquire: tried again next time
        }
    }

    /**
     * The lock node's path: WriteLock keeps its full path when it made the node, and its bare
     * name when it found the node again after a lost create reply (findPrefixInChildren).
     */
    String nodePath(WriteLock l) {
        String id = l.getId();
        if (id == null) return null;
        return id.startsWith("/") ? id : path + "/" + id;
    }

    /** unlock() withdraws the acquire's node; then the report. */
    void withdraw(WriteLock l, long id, String event, String why) {
        String failed = "";
        try {
            l.unlock();
        } catch (RuntimeException e) {
            failed = "; its unlock() failed: " + e;
        }
        Thread.interrupted(); // unlock() sets it again when interrupted
        if (event.equals("not_acquired")) {
            emit(obj("event", event, "id", id, "reason", why + failed));
        } else {
            emit(obj("event", event, "id", id, "message", why + failed));
        }
    }

    synchronized void cancel(long id) {
        if (acquiring == null || acquiring != id) return;
        if (started) {
            if (waiter != null) waiter.cancelled = true;
            notifyAll();
            ownerThread.interrupt();
        } else {
            cancelEarly = true;
        }
    }

    void release(long id) {
        WriteLock l;
        synchronized (this) {
            holding = null;
            l = heldBy == null ? lock : heldBy;
            heldBy = null;
        }
        try {
            // unlock() throws a RuntimeException when its delete fails (other than NoNode);
            // it forgets its node either way.
            l.unlock();
            emit(obj("event", "released", "id", id));
        } catch (RuntimeException e) {
            emit(obj("event", "error", "id", id, "message", e.toString()));
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("train")) {
            train();
            System.exit(0);
        }
        if (args.length != 4) {
            System.err.println("usage: ZklockZookeeperDriver writelock CONNECT LOCK_PATH SESSION_TIMEOUT_MS");
            System.exit(2);
        }
        ZklockZookeeperDriver d = open(args[0], args[1], args[2], Integer.parseInt(args[3]));
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
                try {
                    d = open((String) kind, (String) connect, (String) lockPath, (int) (long) (Long) timeout);
                } catch (IllegalArgumentException e) {
                    emit(obj("event", "error", "id", null, "message", "bad open: " + e.getMessage()));
                }
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
                if (!mode.equals("blocking") && !mode.equals("try") && !mode.equals("timed")) {
                    emit(obj("event", "error", "id", id, "message", "bad acquire: mode " + mode));
                    continue;
                }
                boolean fresh = "fresh".equals(object);
                ZklockZookeeperDriver on = d;
                on.sent(id);
                on.owner.execute(() -> on.acquire(id, mode, timeoutMs, fresh));
            } else if ("release".equals(op)) {
                ZklockZookeeperDriver on = d;
                on.owner.execute(() -> on.release(id));
            } else if ("cancel".equals(op)) {
                d.cancel(id);
            } else {
                emit(obj("event", "error", "id", id, "message", "unknown op " + op));
            }
        }
        if (d != null) {
            d.closed = true;
            d.zk.close();
        }
        OUT.flush();
        System.exit(0);
    }

    /** A driver with its session connected and its hello sent. */
    static ZklockZookeeperDriver open(String kind, String connect, String path, int sessionTimeoutMs)
            throws Exception {
        if (!kind.equals("writelock")) throw new IllegalArgumentException("unknown kind " + kind);
        ZklockZookeeperDriver d = new ZklockZookeeperDriver(connect, path, sessionTimeoutMs);
        // The hello waits until the handle is connected, as Curator's driver waits for its client.
        d.watcher.connected.await(Math.max(10_000, sessionTimeoutMs), TimeUnit.MILLISECONDS);
        String version = version();
        emit(obj("event", "hello", "protocol", (long) PROTOCOL, "library", "zookeeper-recipes-lock",
                "version", version == null ? "unknown" : version,
                "lock", "WriteLock", "session_id", d.sessionId()));
        return d;
    }

    /**
     * Closes the session and waits for its requests to end (an acquire still waiting is
     * interrupted), so that nothing of it is reported after the reset's answer; false
     * when one is stuck.
     */
    boolean reset() throws InterruptedException {
        closed = true;
        lock.close();
        zk.close();
        owner.shutdownNow();
        return owner.awaitTermination(RESET_JOIN_MS, TimeUnit.MILLISECONDS);
    }

    /**
     * Goes through what a driver loads, offline: a handle that cannot connect (a port nothing
     * listens on), a timed acquire on it given up after a while, a release, the protocol's
     * parsing and reports (into nothing).
     */
    static void train() throws Exception {
        ZklockZookeeperDriver d = new ZklockZookeeperDriver("127.0.0.1:1", "/zklock/train", 1000);
        d.lock.setRetryDelay(1);
        d.sent(1);
        d.owner.execute(() -> d.acquire(1, "timed", 100, false));
        Thread.sleep(1_000);
        d.cancel(1);
        d.lose("disconnected", "training");
        Json.parse("{\"op\":\"acquire\",\"id\":1,\"mode\":\"timed\",\"timeout_ms\":3000,\"object\":\"same\"}");
        version();
        d.reset();
    }

    /** zookeeper-recipes-lock's version: its manifest's, else its jar's name (Debian's links name it). */
    static String version() {
        String v = WriteLock.class.getPackage().getImplementationVersion();
        if (v != null) return v;
        try {
            java.nio.file.Path jar = java.nio.file.Paths.get(
                    WriteLock.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            java.util.regex.Pattern versioned = java.util.regex.Pattern.compile("-([0-9][^/]*)\\.jar$");
            java.util.regex.Matcher m = versioned.matcher(jar.toRealPath().getFileName().toString());
            if (m.find()) return m.group(1);
            // The unversioned link is a file of its own on some systems: the versioned jar
            // beside it names the version.
            try (java.nio.file.DirectoryStream<java.nio.file.Path> dir =
                    java.nio.file.Files.newDirectoryStream(jar.getParent(), "zookeeper-recipes-lock-*.jar")) {
                for (java.nio.file.Path p : dir) {
                    java.util.regex.Matcher mv = versioned.matcher(p.getFileName().toString());
                    if (mv.find()) return mv.group(1);
                }
            }
            return jar.getFileName().toString();
        } catch (Exception e) {
            return "unknown";
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
