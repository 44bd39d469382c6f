// Cases of zklock's Curator driver (drivers/curator/ZklockCuratorDriver.java) against a
// stand-in for Curator's lock, for real/tests/drivers/curator_cases.rs, which compiles it
// beside the driver. The driver writes its reports on stdout; the test reads them.
//
// usage: java -cp <driver>:<curator jars>:<dir> CuratorDriverCases CASE

import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.retry.RetryOneTime;

public final class CuratorDriverCases {
    /** A lock that is free at once: only a cancel keeps an acquire from it. */
    static final class Granting implements InterProcessLock {
        public void acquire() {}
        public boolean acquire(long time, TimeUnit unit) { return true; }
        public void release() {}
        public boolean isAcquiredInThisProcess() { return false; }
    }

    public static void main(String[] args) {
        // Never started: the driver only registers its state listener.
        ZklockCuratorDriver d = new ZklockCuratorDriver("mutex", "/zklock/lock",
                CuratorFrameworkFactory.newClient("127.0.0.1:1", new RetryOneTime(1)), new Granting());
        switch (args[0]) {
            case "cancel_sent_before_its_acquire_starts":
                // As the reading thread does, with the owner thread not yet at the acquire.
                d.sent(1);
                d.cancel(1);
                d.acquire(1, "blocking", 0);
                break;
            default:
                throw new IllegalArgumentException("unknown case " + args[0]);
        }
        ZklockCuratorDriver.OUT.flush();
        System.exit(0);
    }
}
