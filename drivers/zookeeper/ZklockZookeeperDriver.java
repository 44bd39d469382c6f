// zklock's driver for ZooKeeper's own contrib recipes (Debian's libzookeeper-java): the lock,
// org.apache.zookeeper.recipes.lock.WriteLock (zookeeper-recipes-lock, KIND writelock), and
// the election, org.apache.zookeeper.recipes.leader.LeaderElectionSupport
// (zookeeper-recipes-election, KIND election). It speaks zklock's lock-under-test protocol
// (version 3, docs/drivers.md) on stdin/stdout, one JSON object a line.
//
// usage: java -cp <zookeeper jars>:<dir> ZklockZookeeperDriver KIND CONNECT LOCK_PATH SESSION_TIMEOUT_MS
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
//
// The election is driven as a lock, as the Curator and Kazoo drivers drive theirs: an acquire
// joins it with a new LeaderElectionSupport (start()) and waits for its ELECTED_COMPLETE
// event, a hold is a term of leadership, the release leaves the election (stop()). A FAILED
// event ends the acquire as failed. LeaderElectionSupport, like WriteLock, never says that a
// term is over: the loss is learnt from the handle's watcher, as for the lock. It assumes its
// root node exists: the driver makes it, as its user must.

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
import org.apache.zookeeper.recipes.leader.LeaderElectionAware;
import org.apache.zookeeper.recipes.leader.LeaderElectionSupport;
import org.apache.zookeeper.recipes.leader.LeaderOffer;
import org.apache.zookeeper.recipes.lock.LockListener;
import org.apache.zookeeper.recipes.lock.WriteLock;

public final class ZklockZookeeperDriver {
    static final int PROTOCOL = 3;
    // How long a reset waits for the old session's requests to end; past it the JVM exits.
    static final long RESET_JOIN_MS = 3_000;
    static final int LINE_BYTES_MAX = 65536;
    static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    final String kind;
    final String connect;
    final String path;
    final int sessionTimeoutMs;
    // The current handle and its lock object: replaced after an expiry (the handle is dead
    // then) and, the lock object alone, by an acquire that asks for a fresh one (the
    // election's by every acquire: each joins with a new LeaderElectionSupport).
    volatile ZooKeeper zk;
    volatile Contender lock;
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
    Contender heldBy = null;
    boolean lostSent = false;
    // Set by a reset: the old session's watcher reports nothing more.
    volatile boolean closed = false;
    // Whether the lock directory's parents are known to exist (the owner thread's).
    boolean parentsMade = false;

    /** An acquire waiting for lockAcquired() of its lock object, or for its session's end. */
    static final class Waiter {
        final Contender lock;
        boolean acquired = false;
        boolean expired = false;
        // The election's FAILED event came: the acquire ends as failed.
        String failed = null;
        // A cancel came: WriteLock swallows some interrupts (ensurePathExists, its retries'
        // sleeps), and LeaderElectionSupport turns one into FAILED, so the wait looks at
        // this too.
        boolean cancelled = false;

        Waiter(Contender lock) {
            this.lock = lock;
        }
    }

    /** What an acquire drives: a WriteLock, or one entry into the election. */
    interface Contender {
        /** Starts the acquire: whether it is held now (the election: elected in start()). */
        boolean offer() throws KeeperException, InterruptedException;

        /** The node of its offer (its full path), or null. */
        String nodePath();

        /** Withdraws the offer, or gives the hold up; a RuntimeException when that failed. */
        void withdraw();

        /** Drops the object, its session gone. */
        void close();

        ZooKeeper zk();
    }

    /** Marks the acquire waiting on `of` acquired, or failed (`failed` not null). */
    void wake(Contender of, String failed) {
        synchronized (this) {
            Waiter w = waiter;
            if (w != null && w.lock == of) {
                if (failed == null) w.acquired = true;
                else w.failed = failed;
            }
            notifyAll();
        }
    }

    /** WriteLock, whose listener's lockAcquired() wakes the acquire that waits on it. */
    final class Lock implements Contender, LockListener {
        final WriteLock w;

        Lock(ZooKeeper z) {
            w = new WriteLock(z, path, null, this);
        }

        public void lockAcquired() {
            wake(this, null);
        }

        public void lockReleased() {}

        public boolean offer() throws KeeperException, InterruptedException {
            return w.lock() || w.isOwner();
        }

        /**
         * WriteLock keeps its full path when it made the node, and its bare name when it
         * found the node again after a lost create reply (findPrefixInChildren).
         */
        public String nodePath() {
            String id = w.getId();
            if (id == null) return null;
            return id.startsWith("/") ? id : path + "/" + id;
        }

        /** unlock() throws a RuntimeException when its delete fails (other than NoNode). */
        public void withdraw() {
            w.unlock();
        }

        public void close() {
            w.close();
        }

        public ZooKeeper zk() {
            return w.getZookeeper();
        }
    }

    /** One entry into the election: a LeaderElectionSupport started by offer(). */
    final class Election implements Contender, LeaderElectionAware {
        final LeaderElectionSupport e = new LeaderElectionSupport();
        // Its last FAILED event, set on the thread that dispatched it.
        volatile boolean failedSince = false;

        Election(ZooKeeper z) {
            e.setZooKeeper(z);
            e.setRootNodeName(path);
            e.setHostName("zklock-driver-" + ProcessHandle.current().pid());
            e.addListener(this);
        }

        public void onElectionEvent(LeaderElectionSupport.EventType event) {
            if (event == LeaderElectionSupport.EventType.ELECTED_COMPLETE) wake(this, null);
            if (event == LeaderElectionSupport.EventType.FAILED) {
                failedSince = true;
                wake(this, "LeaderElectionSupport FAILED");
            }
        }

        /** start() reports its failures (a lost create reply too) as FAILED, not thrown. */
        public boolean offer() {
            failedSince = false;
            e.start();
            if (failedSince) throw new IllegalStateException("LeaderElectionSupport start() FAILED");
            synchronized (ZklockZookeeperDriver.this) {
                Waiter w = waiter;
                return w != null && w.lock == this && w.acquired;
            }
        }

        /** Its offer's path, kept in a private field (the recipe has no getter for it). */
        public String nodePath() {
            try {
                java.lang.reflect.Field f = LeaderElectionSupport.class.getDeclaredField("leaderOffer");
                f.setAccessible(true);
                LeaderOffer offer = (LeaderOffer) f.get(e);
                return offer == null ? null : offer.getNodePath();
            } catch (ReflectiveOperationException x) {
                throw new IllegalStateException("LeaderElectionSupport.leaderOffer unreadable: " + x);
            }
        }

        /** stop() deletes the offer, and reports a failed delete as FAILED. */
        public void withdraw() {
            failedSince = false;
            e.stop();
            if (failedSince) throw new IllegalStateException("LeaderElectionSupport stop() FAILED to delete its offer");
        }

        public void close() {}

        public ZooKeeper zk() {
            return e.getZooKeeper();
        }
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

    ZklockZookeeperDriver(String kind, String connect, String path, int sessionTimeoutMs) throws Exception {
        this.kind = kind;
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

    Contender lockOn(ZooKeeper z) {
        return kind.equals("election") ? new Election(z) : new Lock(z);
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
        Contender old = lock;
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
        if (fresh || kind.equals("election")) {
            // A new object for this acquire and the next ones, on the same handle: the old
            // one is dropped with whatever it left behind.
            lock = lockOn(zk);
        }
        Contender l = lock;
        Waiter w = new Waiter(l);
        makeParents(l.zk());
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
            boolean got = l.offer();
            if (w.cancelled) throw new InterruptedException("cancelled");
            if (!got && mode.equals("try")) {
                settled(id);
                withdraw(l, id, "not_acquired", "held");
                return;
            }
            if (!got) {
                long deadline = mode.equals("timed") ? System.nanoTime() + timeoutMs * 1_000_000L : Long.MAX_VALUE;
                boolean expired;
                String failed;
                synchronized (this) {
                    while (!w.acquired && !w.expired && w.failed == null) {
                        if (w.cancelled) throw new InterruptedException("cancelled");
                        long left = deadline - System.nanoTime();
                        if (left <= 0) break;
                        long ms = Math.max(1, left / 1_000_000L);
                        wait(deadline == Long.MAX_VALUE ? 0 : ms);
                    }
                    got = w.acquired;
                    expired = w.expired;
                    failed = w.failed;
                }
                if (!got) {
                    settled(id);
                    if (failed != null) {
                        withdraw(l, id, "error", failed);
                    } else if (expired) {
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
            String node = l.nodePath();
            Stat stat;
            try {
                // No node, no stat: the token is -1, a grant the checker judges.
                stat = node == null ? null : l.zk().exists(node, false);
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
     * creates the one node), and LeaderElectionSupport makes neither: its user makes them,
     * as here, once a session. A failure is left to the recipe, which then reports NoNode.
     */
    void makeParents(ZooKeeper z) {
        if (parentsMade) return;
        String dirs = kind.equals("election") ? path + "/" : path;
        try {
            for (int at = dirs.indexOf('/', 1); at > 0; at = dirs.indexOf('/', at + 1)) {
                try {
                    z.create(dirs.substring(0, at), new byte[0],
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

    /** The acquire's node withdrawn (unlock(), stop()); then the report. */
    void withdraw(Contender l, long id, String event, String why) {
        String failed = "";
        try {
            l.withdraw();
        } catch (RuntimeException e) {
            failed = "; its withdrawal failed: " + e;
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
            // LeaderElectionSupport turns an interrupt in start() into FAILED, after its
            // create may have reached the server: the node it then never learnt of stays
            // with the session. Its user gives up with stop(), which waits for start()
            // (both synchronized): the acquire sees the flag when start() returns.
            if (!kind.equals("election")) ownerThread.interrupt();
        } else {
            cancelEarly = true;
        }
    }

    void release(long id) {
        Contender l;
        synchronized (this) {
            holding = null;
            l = heldBy == null ? lock : heldBy;
            heldBy = null;
        }
        try {
            // A failed delete throws; the recipe forgets its node either way.
            l.withdraw();
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
            System.err.println("usage: ZklockZookeeperDriver writelock|election CONNECT LOCK_PATH SESSION_TIMEOUT_MS");
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
        boolean election = kind.equals("election");
        if (!election && !kind.equals("writelock")) throw new IllegalArgumentException("unknown kind " + kind);
        ZklockZookeeperDriver d = new ZklockZookeeperDriver(kind, connect, path, sessionTimeoutMs);
        // The hello waits until the handle is connected, as Curator's driver waits for its client.
        d.watcher.connected.await(Math.max(10_000, sessionTimeoutMs), TimeUnit.MILLISECONDS);
        String library = election ? "zookeeper-recipes-election" : "zookeeper-recipes-lock";
        String version = version(election ? LeaderElectionSupport.class : WriteLock.class, library);
        emit(obj("event", "hello", "protocol", (long) PROTOCOL, "library", library,
                "version", version == null ? "unknown" : version,
                "lock", election ? "LeaderElectionSupport" : "WriteLock", "session_id", d.sessionId()));
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
        for (String kind : new String[] {"writelock", "election"}) {
            ZklockZookeeperDriver d = new ZklockZookeeperDriver(kind, "127.0.0.1:1", "/zklock/train", 1000);
            if (d.lock instanceof Lock) ((Lock) d.lock).w.setRetryDelay(1);
            d.sent(1);
            d.owner.execute(() -> d.acquire(1, "timed", 100, false));
            Thread.sleep(1_000);
            d.cancel(1);
            d.lose("disconnected", "training");
            d.lock.nodePath();
            d.reset();
        }
        Json.parse("{\"op\":\"acquire\",\"id\":1,\"mode\":\"timed\",\"timeout_ms\":3000,\"object\":\"same\"}");
        version(WriteLock.class, "zookeeper-recipes-lock");
        version(LeaderElectionSupport.class, "zookeeper-recipes-election");
    }

    /** A recipe jar's version: its manifest's, else its jar's name (Debian's links name it). */
    static String version(Class<?> recipe, String jarName) {
        String v = recipe.getPackage().getImplementationVersion();
        if (v != null) return v;
        try {
            java.nio.file.Path jar = java.nio.file.Paths.get(
                    recipe.getProtectionDomain().getCodeSource().getLocation().toURI());
            java.util.regex.Pattern versioned = java.util.regex.Pattern.compile("-([0-9][^/]*)\\.jar$");
            java.util.regex.Matcher m = versioned.matcher(jar.toRealPath().getFileName().toString());
            if (m.find()) return m.group(1);
            // The unversioned link is a file of its own on some systems: the versioned jar
            // beside it names the version.
            try (java.nio.file.DirectoryStream<java.nio.file.Path> dir =
                    java.nio.file.Files.newDirectoryStream(jar.getParent(), jarName + "-*.jar")) {
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
