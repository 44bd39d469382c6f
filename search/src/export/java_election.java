    /**
     * A client: a ZooKeeper handle of its own, through its proxy. Each acquire is a new
     * LeaderElectionSupport on it (one start() and one stop() each), driven as a lock: its
     * start() offers, ELECTED_COMPLETE is leadership, FAILED fails the acquire, and stop()
     * withdraws the offer (an acquire that does not lead) or ends the term (the release).
     * A give-up is not an interrupt: an interrupt inside start() may leave an offer its
     * LeaderElectionSupport never learnt of, so the wait after start() looks at a flag.
     */
    final class Client extends ClientBase {
        volatile ZooKeeper handle;
        volatile boolean expired = false;
        final CountDownLatch connected = new CountDownLatch(1);
        // The acquire under way: elected, failed, or given up.
        volatile boolean wakeElected = false, wakeFailed = false, wakeCancelled = false;

        Client(int index, String address) {
            super(index, address);
        }

        void start() throws Exception {
            handle = new ZooKeeper(address, (int) SESSION_TIMEOUT_MS, e -> {
                if (e.getType() != Watcher.Event.EventType.None) return;
                if (e.getState() == Watcher.Event.KeeperState.SyncConnected) connected.countDown();
                if (e.getState() == Watcher.Event.KeeperState.Expired) expired = true;
            });
            if (!connected.await(CONNECT_MS, TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("client " + index + " did not connect in " + CONNECT_MS + " ms");
            }
            // LeaderElectionSupport makes neither its root node nor the root's parents.
            makeParents(handle, LOCK_PATH + "/");
        }

        ZooKeeper zk() {
            return handle;
        }

        boolean alive() {
            return !expired && handle.getState() == ZooKeeper.States.CONNECTED;
        }

        void close() {
            try {
                handle.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        synchronized void beginAcquire(Thread t) {
            super.beginAcquire(t);
            wakeCancelled = false;
        }

        /** A give-up sets the flag the wait looks at; it interrupts nothing. */
        @Override
        synchronized void cancel() {
            wakeCancelled = true;
            notifyAll();
        }

        ScriptLock makeLock() {
            return new ScriptLock() {
                volatile LeaderElectionSupport election;
                volatile String node;

                public boolean acquire(long timeoutMs) throws Exception {
                    LeaderElectionSupport e = new LeaderElectionSupport();
                    e.setZooKeeper(handle);
                    e.setRootNodeName(LOCK_PATH);
                    e.setHostName("repro-client-" + index);
                    e.addListener(event -> {
                        synchronized (Client.this) {
                            if (event == LeaderElectionSupport.EventType.ELECTED_COMPLETE) wakeElected = true;
                            if (event == LeaderElectionSupport.EventType.FAILED) wakeFailed = true;
                            Client.this.notifyAll();
                        }
                    });
                    synchronized (Client.this) {
                        wakeElected = false;
                        wakeFailed = false;
                    }
                    election = e;
                    node = null;
                    e.start();
                    node = offerOf(e);
                    boolean led = false;
                    try {
                        led = await(timeoutMs);
                        return led;
                    } finally {
                        if (!led) withdraw(e);
                    }
                }

                /** Leadership, or false at the timeout; FAILED and a give-up throw. */
                boolean await(long timeoutMs) throws InterruptedException {
                    long deadline = timeoutMs < 0 ? Long.MAX_VALUE : System.nanoTime() + timeoutMs * 1_000_000L;
                    synchronized (Client.this) {
                        while (!wakeElected) {
                            if (wakeFailed) throw new IllegalStateException("LeaderElectionSupport FAILED");
                            if (wakeCancelled) throw new InterruptedException("given up");
                            long left = deadline - System.nanoTime();
                            if (left <= 0) return false;
                            Client.this.wait(deadline == Long.MAX_VALUE ? 0 : Math.max(1, left / 1_000_000L));
                        }
                        return true;
                    }
                }

                /** stop() deletes the offer; a delete that fails is reported as FAILED, not thrown. */
                void withdraw(LeaderElectionSupport e) {
                    synchronized (Client.this) {
                        wakeFailed = false;
                    }
                    e.stop();
                    if (wakeFailed) log("client " + index + ": stop() FAILED to delete its offer " + node);
                }

                public void release() {
                    LeaderElectionSupport e = election;
                    synchronized (Client.this) {
                        wakeFailed = false;
                    }
                    e.stop();
                    if (wakeFailed) throw new IllegalStateException("stop() FAILED to delete its offer " + node);
                }

                /** The offer's path, from the start() that made it (kept after stop()). */
                public String node() {
                    return node;
                }

                public String name() {
                    return "LeaderElectionSupport.start()";
                }
            };
        }
    }

    /** The offer's path: LeaderElectionSupport keeps it private, so it is read by reflection. */
    static String offerOf(LeaderElectionSupport e) {
        try {
            Field f = LeaderElectionSupport.class.getDeclaredField("leaderOffer");
            f.setAccessible(true);
            LeaderOffer offer = (LeaderOffer) f.get(e);
            return offer == null ? null : offer.getNodePath();
        } catch (ReflectiveOperationException x) {
            return null;
        }
    }

    static String versions() {
        String zk = org.apache.zookeeper.Version.getFullVersion().split("[-,]")[0];
        return String.format("ZooKeeper's recipes (zookeeper-recipes-election) %s, ZooKeeper %s, Java %s",
                jarVersion(LeaderElectionSupport.class), zk, System.getProperty("java.version"));
    }
