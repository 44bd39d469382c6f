/*
 * Curator's InterProcessMutex contenders for `zklock bench` (zklock_bench::cells::curator_cell).
 *
 * usage: java -cp <curator and zookeeper jars>:<this class's dir> CuratorBench
 *            HOSTS LOCK_PATH CLIENTS MAX_ACQUISITIONS SESSION_TIMEOUT_MS WARMUP_MS
 *
 * One JVM runs CLIENTS contenders, each on its own thread with its own CuratorFramework
 * (its own session) and its own InterProcessMutex on LOCK_PATH, reused for every
 * acquisition as Curator's users do. Before READY, every contender acquires and releases a
 * lock of its own on LOCK_PATH + "-warmup" for WARMUP_MS, so that the JVM's JIT has compiled
 * the lock's path before anything is measured.
 *
 * Protocol, one line each, times in CLOCK_MONOTONIC seconds (System.nanoTime() on Linux):
 *     stdout  READY <t>                 connected, warmed up
 *     stdin   GO <start> <end>          wait until <start>, then acquire -> release (no hold)
 *                                       in a tight loop while the clock is before <end> and
 *                                       fewer than MAX_ACQUISITIONS holds were made
 *     stdout  H <client> <acquired> <release>   one per hold, printed after the loop
 *     stdout  DONE <holds> <t>
 * On any error the stack trace goes to stderr and the exit status is non-zero.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public class CuratorBench {
    static double now() {
        return System.nanoTime() / 1e9;
    }

    static void sleepUntil(double t) throws InterruptedException {
        double d = t - now();
        if (d > 0) {
            Thread.sleep((long) (d * 1000), (int) ((d * 1e9) % 1_000_000));
        }
    }

    public static void main(String[] args) throws Exception {
        String hosts = args[0];
        String path = args[1];
        int clients = Integer.parseInt(args[2]);
        long max = Long.parseLong(args[3]);
        int sessionMs = Integer.parseInt(args[4]);
        long warmupMs = Long.parseLong(args[5]);

        List<CuratorFramework> frameworks = new ArrayList<>();
        List<InterProcessMutex> locks = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            CuratorFramework cf = CuratorFrameworkFactory.builder()
                    .connectString(hosts)
                    .sessionTimeoutMs(sessionMs)
                    .connectionTimeoutMs(30_000)
                    .retryPolicy(new RetryNTimes(3, 100))
                    .build();
            cf.start();
            if (!cf.blockUntilConnected(30, java.util.concurrent.TimeUnit.SECONDS)) {
                throw new IllegalStateException("client " + i + " did not connect in 30 s");
            }
            frameworks.add(cf);
            locks.add(new InterProcessMutex(cf, path));
        }

        // Warm-up: each contender in turn on a lock of its own (so none waits on another),
        // at least once, for its share of WARMUP_MS: the JIT compiles the code they share.
        long shareNs = warmupMs * 1_000_000L / clients;
        for (int i = 0; i < clients; i++) {
            InterProcessMutex own = new InterProcessMutex(frameworks.get(i), path + "-warmup/" + i);
            long until = System.nanoTime() + shareNs;
            do {
                own.acquire();
                own.release();
            } while (System.nanoTime() < until);
        }
        System.out.println("READY " + now());
        System.out.flush();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String[] go = in.readLine().trim().split(" ");
        if (go.length != 3 || !go[0].equals("GO")) {
            throw new IllegalArgumentException("expected 'GO <start> <end>', got " + String.join(" ", go));
        }
        double start = Double.parseDouble(go[1]);
        double end = Double.parseDouble(go[2]);

        List<List<double[]>> holds = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(clients);
        for (int i = 0; i < clients; i++) {
            List<double[]> mine = new ArrayList<>();
            holds.add(mine);
            InterProcessMutex lock = locks.get(i);
            Thread t = new Thread(() -> {
                try {
                    sleepUntil(start);
                    while (mine.size() < max && now() < end) {
                        lock.acquire();
                        double acquired = now();
                        double released = now();
                        lock.release();
                        mine.add(new double[] {acquired, released});
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                } finally {
                    done.countDown();
                }
            });
            t.start();
            threads.add(t);
        }
        done.await();
        if (failure.get() != null) {
            failure.get().printStackTrace();
            System.exit(1);
        }
        StringBuilder out = new StringBuilder();
        long total = 0;
        for (int i = 0; i < clients; i++) {
            for (double[] h : holds.get(i)) {
                out.append("H ").append(i).append(' ').append(h[0]).append(' ').append(h[1]).append('\n');
                total++;
            }
        }
        out.append("DONE ").append(total).append(' ').append(now()).append('\n');
        System.out.print(out);
        System.out.flush();
        for (CuratorFramework cf : frameworks) {
            cf.close();
        }
    }
}
