// Share group (KIP-932) benchmark: one partition, C KafkaShareConsumers (one thread each, explicit
// acknowledgement, commitSync after each poll), Kafka 4.4 clients. Two phases on a fresh topic:
//
//  1. latency: a producer (acks=all) offers RATE records/s open loop for SECS seconds (each record
//     carries its intended send time); the produce-to-acknowledge latency of a record is the time
//     from its intended send to the return of the commitSync that stored its acknowledgement (µs,
//     HdrHistogram), counted for records sent after WARMUP seconds;
//  2. throughput: the consumers leave, BACKLOG records are produced, C new consumers drain them:
//     delivered records/s = BACKLOG / (time from their start to the last acknowledgement stored).
//
// Usage: ShareBench <bootstrap> <consumers> <rate> <secs> <warmup secs> <backlog> <record bytes>
// Prints one JSON line.

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ShareBench {
    static final AtomicBoolean running = new AtomicBoolean(true);
    static final AtomicLong acked = new AtomicLong();
    static final AtomicLong lastAckNanos = new AtomicLong();
    static volatile long measureFrom = Long.MAX_VALUE;
    static volatile long measureTo = Long.MAX_VALUE;
    static final Histogram latency = new Histogram(TimeUnit.SECONDS.toMicros(60), 3);
    // Diagnostics: with SHARE_BENCH_SLOW_US set, each measured record slower than that is printed
    // to stderr at the end (send time from the measurement's start in ms, latency us, consumer,
    // records in its poll, send time in CLOCK_MONOTONIC s), to see whether the slow ones come
    // together or alone, and when (`perf record -k CLOCK_MONOTONIC` shares the clock).
    static final long slowUs = Long.parseLong(System.getenv().getOrDefault("SHARE_BENCH_SLOW_US", "0"));
    static final List<String> slow = new ArrayList<>();

    public static void main(String[] a) throws Exception {
        String bootstrap = a[0];
        int consumers = Integer.parseInt(a[1]);
        double rate = Double.parseDouble(a[2]);
        double secs = Double.parseDouble(a[3]);
        double warmup = Double.parseDouble(a[4]);
        int backlog = Integer.parseInt(a[5]);
        int size = Integer.parseInt(a[6]);
        String topic = "share-bench-" + UUID.randomUUID().toString().substring(0, 8);
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
        }
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("acks", "all");
        pp.put("linger.ms", "0");
        pp.put("key.serializer", ByteArraySerializer.class.getName());
        pp.put("value.serializer", ByteArraySerializer.class.getName());
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < consumers; i++) {
            final int id = i;
            Thread t = new Thread(() -> consume(bootstrap, topic, id), "share-" + i);
            t.start();
            threads.add(t);
        }
        // A new share group starts at the log end: sentinels until some consumer acknowledged one.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (acked.get() == 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("no consumer got a record within 60 s");
            }
            producer.send(new ProducerRecord<>(topic, stamp(System.nanoTime(), size))).get();
            Thread.sleep(200);
        }
        Thread.sleep(2000); // every member joins and gets the partition
        // 1. latency, open loop
        long start = System.nanoTime();
        measureFrom = start + (long) (warmup * 1e9);
        measureTo = start + (long) ((warmup + secs) * 1e9);
        long n = (long) (rate * (warmup + secs));
        // How late the sender handed each measured record to the producer (µs): the load
        // generator's own share of the tail, its floor.
        Histogram sendLate = new Histogram(60_000_000L, 3);
        for (long i = 0; i < n; i++) {
            long due = start + (long) (i * 1e9 / rate);
            // Sleep until the record is due, never spin: a spinning sender takes a core of this
            // 2-core machine from the broker and the consumers, and its own scheduling delays
            // then set the measured tail (latency counts from the intended send either way).
            long now;
            while ((now = System.nanoTime()) < due) {
                LockSupport.parkNanos(due - now);
            }
            if (due >= measureFrom) {
                sendLate.recordValue(Math.max(1, (now - due) / 1000));
            }
            producer.send(new ProducerRecord<>(topic, stamp(due, size)));
        }
        producer.flush();
        Thread.sleep(3000);
        // 2. throughput: the consumers leave, a backlog is produced, new consumers drain it
        // (delivered records/s from their start to the last acknowledgement stored; the group
        // resumes at its start offset, past every record of phase 1).
        running.set(false);
        for (Thread t : threads) {
            t.join(30_000);
        }
        threads.clear();
        for (int i = 0; i < backlog; i++) {
            producer.send(new ProducerRecord<>(topic, stamp(0, size)));
        }
        producer.flush();
        acked.set(0);
        running.set(true);
        long resumed = System.nanoTime();
        for (int i = 0; i < consumers; i++) {
            final int id = i;
            Thread t = new Thread(() -> consume(bootstrap, topic, id), "share-drain-" + i);
            t.start();
            threads.add(t);
        }
        deadline = resumed + TimeUnit.SECONDS.toNanos(300);
        while (acked.get() < backlog && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        long drained = acked.get();
        double drainSecs = (lastAckNanos.get() - resumed) / 1e9;
        running.set(false);
        for (Thread t : threads) {
            t.join(30_000);
        }
        producer.close();
        Histogram h;
        synchronized (latency) {
            h = latency.copy();
            for (String line : slow) {
                System.err.println(line);
            }
        }
        System.out.printf(
                "{\"consumers\": %d, \"rate\": %.0f, \"secs\": %.0f, \"record_bytes\": %d, \"samples\": %d, "
                        + "\"latency_us\": {\"p50\": %d, \"p90\": %d, \"p99\": %d, \"p99.9\": %d, \"p99.99\": %d, \"max\": %d}, "
                        + "\"send_late_us\": {\"p50\": %d, \"p99\": %d, \"p99.9\": %d, \"max\": %d}, "
                        + "\"backlog\": %d, \"drained\": %d, \"drain_secs\": %.3f, \"delivered_per_sec\": %.0f}%n",
                consumers, rate, secs, size, h.getTotalCount(), h.getValueAtPercentile(50), h.getValueAtPercentile(90),
                h.getValueAtPercentile(99), h.getValueAtPercentile(99.9), h.getValueAtPercentile(99.99), h.getMaxValue(),
                sendLate.getValueAtPercentile(50), sendLate.getValueAtPercentile(99), sendLate.getValueAtPercentile(99.9),
                sendLate.getMaxValue(), backlog, drained, drainSecs, drained / Math.max(drainSecs, 1e-9));
        System.exit(0);
    }

    static byte[] stamp(long nanos, int size) {
        ByteBuffer b = ByteBuffer.allocate(Math.max(size, 8));
        b.putLong(nanos);
        return b.array();
    }

    static void consume(String bootstrap, String topic, int id) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", "share-bench-" + topic);
        p.put("client.id", "share-bench-" + id);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(topic));
            while (running.get()) {
                List<Long> stamps = new ArrayList<>();
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    stamps.add(ByteBuffer.wrap(r.value()).getLong());
                }
                if (stamps.isEmpty()) {
                    continue;
                }
                c.commitSync();
                long now = System.nanoTime();
                synchronized (latency) {
                    for (long s : stamps) {
                        if (s >= measureFrom && s <= measureTo) {
                            long us = Math.max(0, (now - s) / 1000);
                            latency.recordValue(us);
                            if (slowUs > 0 && us > slowUs) {
                                slow.add(String.format("slow %.1f ms %d us consumer %d poll %d at %.3f",
                                        (s - measureFrom) / 1e6, us, id, stamps.size(), s / 1e9));
                            }
                        }
                    }
                }
                acked.addAndGet(stamps.size());
                lastAckNanos.set(now);
            }
        }
    }
}
