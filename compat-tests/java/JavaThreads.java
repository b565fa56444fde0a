// JavaThreads: the JVM's threads (HotSpot's GC and JIT compiler threads, platform threads of a
// thread pool) doing work that checks itself: a fixed pool computing sums, monitors
// (synchronized, wait/notifyAll) in a producer/consumer queue, java.util.concurrent locks,
// latches and atomics. Prints "ok JavaThreads <checksum>" (identical natively and under arbrun;
// compat-tests/real-programs/run.sh java), or "FAIL ..." and exits 1.
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

public class JavaThreads {
    static int failures = 0;

    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL JavaThreads: " + what);
            failures++;
        }
    }

    // The same sum in closed form, so a lost or repeated iteration shows.
    static long expectedSum(int id, int n) {
        long s = 0;
        for (int i = 0; i < n; i++) s += (long) i * (id + 1) % 7;
        return s;
    }

    // A bounded queue on a monitor: put/take wait and notifyAll across threads.
    static final class BoundedQueue {
        private final ArrayDeque<Long> items = new ArrayDeque<>();
        private final int capacity;

        BoundedQueue(int capacity) { this.capacity = capacity; }

        synchronized void put(long v) throws InterruptedException {
            while (items.size() == capacity) wait();
            items.add(v);
            notifyAll();
        }

        synchronized long take() throws InterruptedException {
            while (items.isEmpty()) wait();
            long v = items.remove();
            notifyAll();
            return v;
        }
    }

    public static void main(String[] args) throws Exception {
        final int threads = 8, n = 400_000;
        long checksum = 0;

        // 1. A fixed pool: every task's sum is checked against a sequential computation.
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Long>> results = new ArrayList<>();
        for (int t = 0; t < threads * 2; t++) {
            final int id = t;
            results.add(pool.submit(() -> {
                long s = 0;
                for (int i = 0; i < n; i++) s += (long) i * (id + 1) % 7;
                return s;
            }));
        }
        for (int t = 0; t < results.size(); t++) {
            long got = results.get(t).get();
            check(got == expectedSum(t, n), "pool task " + t + " sum " + got);
            checksum = checksum * 31 + got;
        }

        // 2. Producers and consumers on a monitor queue: every value arrives exactly once.
        final int producers = 4, perProducer = 5000;
        BoundedQueue queue = new BoundedQueue(16);
        AtomicLong consumed = new AtomicLong();
        ConcurrentHashMap<Long, Boolean> seen = new ConcurrentHashMap<>();
        List<Thread> workers = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            final long base = (long) p * perProducer;
            workers.add(new Thread(() -> {
                try {
                    for (int i = 0; i < perProducer; i++) queue.put(base + i);
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }));
        }
        for (int c = 0; c < producers; c++) {
            workers.add(new Thread(() -> {
                try {
                    for (int i = 0; i < perProducer; i++) {
                        long v = queue.take();
                        if (seen.putIfAbsent(v, Boolean.TRUE) != null) consumed.addAndGet(1L << 40);
                        consumed.addAndGet(v);
                    }
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }));
        }
        for (Thread w : workers) w.start();
        for (Thread w : workers) w.join();
        long total = (long) producers * perProducer;
        check(seen.size() == total, "queue delivered " + seen.size() + " distinct values of " + total);
        check(consumed.get() == total * (total - 1) / 2, "queue sum " + consumed.get());
        checksum = checksum * 31 + consumed.get();

        // 3. A ReentrantLock-protected counter, started together by a latch.
        final int lockers = 6, increments = 20000;
        ReentrantLock lock = new ReentrantLock();
        long[] counter = {0};
        CountDownLatch start = new CountDownLatch(1), done = new CountDownLatch(lockers);
        for (int t = 0; t < lockers; t++) {
            pool.execute(() -> {
                try {
                    start.await();
                    for (int i = 0; i < increments; i++) {
                        lock.lock();
                        try {
                            counter[0]++;
                        } finally {
                            lock.unlock();
                        }
                    }
                } catch (InterruptedException e) {
                    throw new RuntimeException(e);
                } finally {
                    done.countDown();
                }
            });
        }
        start.countDown();
        check(done.await(60, TimeUnit.SECONDS), "lock workers did not finish in 60 s");
        lock.lock();
        try {
            check(counter[0] == (long) lockers * increments, "locked counter " + counter[0]);
            checksum = checksum * 31 + counter[0];
        } finally {
            lock.unlock();
        }

        pool.shutdown();
        check(pool.awaitTermination(60, TimeUnit.SECONDS), "pool did not terminate");
        if (failures != 0) System.exit(1);
        System.out.printf("ok JavaThreads %016x%n", checksum);
    }
}
