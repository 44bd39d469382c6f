    /**
     * A client: a ZooKeeper handle of its own, through its proxy, and a WriteLock on it.
     * WriteLock's lock() only starts an acquire: it returns whether the lock is held now,
     * and otherwise calls its LockListener's lockAcquired() once it is. A blocking or timed
     * acquire is that call and a wait for the callback; a try is one lock() call. Every
     * acquire that does not end held calls unlock() to withdraw its node, as WriteLock's
     * javadoc asks ("removes your request in the queue for locking").
     */
    final class Client extends ClientBase {
        volatile ZooKeeper handle;
        volatile boolean expired = false;
        final CountDownLatch connected = new CountDownLatch(1);
        // The wait of the acquire under way: lockAcquired(), or a cancel (WriteLock swallows
        // some interrupts, so the wait looks at this too).
        volatile boolean wakeAcquired = false, wakeCancelled = false;

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
            makeParents(handle, LOCK_PATH);
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
        void cancelled() {
            synchronized (this) {
                wakeCancelled = true;
                notifyAll();
            }
        }

        ScriptLock makeLock() {
            WriteLock l = new WriteLock(handle, LOCK_PATH, null, new LockListener() {
                public void lockAcquired() {
                    synchronized (Client.this) {
                        wakeAcquired = true;
                        Client.this.notifyAll();
                    }
                }

                public void lockReleased() {}
            });
            return new ScriptLock() {
                public boolean acquire(long timeoutMs) throws Exception {
                    synchronized (Client.this) {
                        wakeAcquired = false;
                        wakeCancelled = false;
                    }
                    boolean got;
                    try {
                        got = l.lock() || l.isOwner();
                        if (!got && timeoutMs != 0) got = await(timeoutMs);
                    } catch (InterruptedException | KeeperException | RuntimeException e) {
                        withdraw();
                        throw e;
                    }
                    if (!got) withdraw();
                    return got;
                }

                boolean await(long timeoutMs) throws InterruptedException {
                    long deadline = timeoutMs < 0 ? Long.MAX_VALUE : System.nanoTime() + timeoutMs * 1_000_000L;
                    synchronized (Client.this) {
                        while (!wakeAcquired) {
                            if (wakeCancelled) throw new InterruptedException("cancelled");
                            long left = deadline - System.nanoTime();
                            if (left <= 0) return false;
                            Client.this.wait(deadline == Long.MAX_VALUE ? 0 : Math.max(1, left / 1_000_000L));
                        }
                        return true;
                    }
                }

                /** unlock() withdraws the acquire's node. */
                void withdraw() {
                    try {
                        l.unlock();
                    } catch (RuntimeException e) {
                        log("client " + index + ": unlock() failed: " + e);
                    }
                    Thread.interrupted(); // unlock() sets it again when interrupted
                }

                public void release() {
                    // unlock() throws a RuntimeException when its delete fails (other than NoNode).
                    l.unlock();
                }

                /** WriteLock keeps its node's full path when it made it, its bare name when it found it again. */
                public String node() {
                    String id = l.getId();
                    return id == null ? null : id.startsWith("/") ? id : LOCK_PATH + "/" + id;
                }

                public String name() {
                    return "WriteLock.lock()";
                }
            };
        }
    }

    static String versions() {
        String zk = org.apache.zookeeper.Version.getFullVersion().split("[-,]")[0];
        return String.format("ZooKeeper's recipes (zookeeper-recipes-lock) %s, ZooKeeper %s, Java %s",
                jarVersion(WriteLock.class), zk, System.getProperty("java.version"));
    }
