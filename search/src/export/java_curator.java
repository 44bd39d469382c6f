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
