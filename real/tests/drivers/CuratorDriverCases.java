// Cases of zklock's Curator driver (drivers/curator/ZklockCuratorDriver.java) against a
// stand-in for Curator's lock, for real/tests/drivers/curator_cases.rs, which compiles it
// beside the driver. The driver writes its reports on stdout; the test reads them.
//
// usage: java -cp <driver>:<curator jars>:<dir> CuratorDriverCases CASE

import java.lang.reflect.Field;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryOneTime;

public final class CuratorDriverCases {
    /** A lock that is free at once: only a cancel keeps an acquire from it. */
    static final class Granting implements InterProcessLock {
        public void acquire() {}
        public boolean acquire(long time, TimeUnit unit) { return true; }
        public void release() {}
        public boolean isAcquiredInThisProcess() { return false; }
    }

    /**
     * A semaphore mutex that grants at once with a named lease, so that the driver goes on
     * to read the lease's node; it says on stdout when it is released.
     */
    static final class Leasing extends InterProcessSemaphoreMutex {
        Leasing(CuratorFramework client) {
            super(client, "/zklock/lock");
        }

        // The driver reads the lease where Curator keeps it, in this private field.
        private void lease(Lease l) throws Exception {
            Field f = InterProcessSemaphoreMutex.class.getDeclaredField("lease");
            f.setAccessible(true);
            f.set(this, l);
        }

        @Override
        public void acquire() throws Exception {
            lease(new Lease() {
                public void close() {}
                public byte[] getData() { return new byte[0]; }
                public String getNodeName() { return "lease-0000000000"; }
            });
        }

        @Override
        public boolean acquire(long time, TimeUnit unit) throws Exception {
            acquire();
            return true;
        }

        @Override
        public void release() throws Exception {
            lease(null);
            ZklockCuratorDriver.OUT.println("stand-in released");
        }
    }

    public static void main(String[] args) {
        // Never started: the driver only registers its state listener, and a request on it
        // fails at once.
        CuratorFramework client = CuratorFrameworkFactory.newClient("127.0.0.1:1", new RetryOneTime(1));
        switch (args[0]) {
            case "cancel_sent_before_its_acquire_starts": {
                ZklockCuratorDriver d = new ZklockCuratorDriver("mutex", "/zklock/lock", client, new Granting());
                // As the reading thread does, with the owner thread not yet at the acquire.
                d.sent(1);
                d.cancel(1);
                d.acquire(1, "blocking", 0);
                break;
            }
            case "token_read_fails": {
                ZklockCuratorDriver d = new ZklockCuratorDriver("semaphore-mutex", "/zklock/lock",
                        client, new Leasing(client));
                // Granted; the read of the lease node's czxid then fails.
                d.sent(1);
                d.acquire(1, "blocking", 0);
                break;
            }
            default:
                throw new IllegalArgumentException("unknown case " + args[0]);
        }
        ZklockCuratorDriver.OUT.flush();
        System.exit(0);
    }
}
