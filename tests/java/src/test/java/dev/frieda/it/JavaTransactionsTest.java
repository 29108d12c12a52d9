package dev.frieda.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Transactions (KIP-98, KIP-890 transactions v2 as the 4.4.0 producer uses them): commit/abort and what
 * read_committed consumers see, zombie fencing, consume-transform-produce with sendOffsetsToTransaction, and
 * Kafka Streams exactly_once_v2 across a broker SIGKILL.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JavaTransactionsTest {
    private static final String RC = "read_committed";
    private static final String RU = "read_uncommitted";

    private Broker broker;

    @BeforeEach
    void start() throws Exception {
        broker = Broker.start();
    }

    @AfterEach
    void stop() throws Exception {
        broker.close();
    }

    // ------------------------------------------------------------------ helpers

    private static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> l = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            l.add(new TopicPartition(topic, i));
        }
        return l;
    }

    private KafkaProducer<String, String> txnProducer(String transactionalId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private <V> KafkaConsumer<String, V> consumer(String isolation, String group, Deserializer<V> values) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        }
        return new KafkaConsumer<>(p, new StringDeserializer(), values);
    }

    private KafkaConsumer<String, String> consumer(String isolation) {
        return consumer(isolation, null, new StringDeserializer());
    }

    /** "p=&lt;partition&gt; off=&lt;offset&gt; &lt;value&gt;", sortable by partition then offset. */
    private static String rec(int partition, long offset, Object value) {
        return String.format("p=%d off=%06d %s", partition, offset, value);
    }

    private static List<String> sorted(List<String> l) {
        List<String> s = new ArrayList<>(l);
        Collections.sort(s);
        return s;
    }

    /**
     * Every record of the topic under the isolation level, by partition then offset: assigns all partitions from
     * the beginning and polls until each position reaches the end offset the consumer reports for its level.
     */
    private <V> List<ConsumerRecord<String, V>> readAll(String topic, int n, String isolation, Deserializer<V> values)
            throws Exception {
        List<TopicPartition> tps = partitions(topic, n);
        List<ConsumerRecord<String, V>> out = new ArrayList<>();
        try (KafkaConsumer<String, V> c = consumer(isolation, null, values)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(30));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!tps.stream().allMatch(tp -> c.position(tp) >= end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    Map<TopicPartition, Long> pos = new HashMap<>();
                    tps.forEach(tp -> pos.put(tp, c.position(tp)));
                    fail(isolation + " read of " + topic + " stuck: positions " + pos + ", end offsets " + end
                            + "\n" + broker.tail());
                }
                for (ConsumerRecord<String, V> r : c.poll(Duration.ofMillis(200))) {
                    out.add(r);
                }
            }
        }
        out.sort(Comparator.<ConsumerRecord<String, V>>comparingInt(ConsumerRecord::partition)
                .thenComparingLong(ConsumerRecord::offset));
        return out;
    }

    private List<String> readValues(String topic, int n, String isolation) throws Exception {
        return readAll(topic, n, isolation, new StringDeserializer()).stream()
                .map(r -> rec(r.partition(), r.offset(), r.value())).collect(Collectors.toList());
    }

    private Map<TopicPartition, Long> adminOffsets(Admin a, String topic, int n, IsolationLevel level) throws Exception {
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        partitions(topic, n).forEach(tp -> req.put(tp, OffsetSpec.latest()));
        return a.listOffsets(req, new ListOffsetsOptions(level)).all().get(30, TimeUnit.SECONDS).entrySet().stream()
                .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }

    private Map<TopicPartition, Long> consumerEndOffsets(String topic, int n, String isolation) {
        try (KafkaConsumer<String, String> c = consumer(isolation)) {
            return new HashMap<>(c.endOffsets(partitions(topic, n), Duration.ofSeconds(30)));
        }
    }

    /**
     * The end offsets under both isolation levels, as KafkaConsumer.endOffsets and Admin.listOffsets report them.
     * Kafka answers EndTxn once the coordinator logged the decision and writes the markers after, so the offsets
     * may take a moment to get there: up to 15 s.
     */
    private void assertEndOffsets(Admin a, String topic, int n, Map<TopicPartition, Long> committed,
            Map<TopicPartition, Long> uncommitted, String when) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (true) {
            Map<TopicPartition, Long> rc = consumerEndOffsets(topic, n, RC);
            Map<TopicPartition, Long> ru = consumerEndOffsets(topic, n, RU);
            Map<TopicPartition, Long> arc = adminOffsets(a, topic, n, IsolationLevel.READ_COMMITTED);
            Map<TopicPartition, Long> aru = adminOffsets(a, topic, n, IsolationLevel.READ_UNCOMMITTED);
            boolean ok = committed.equals(rc) && uncommitted.equals(ru) && committed.equals(arc) && uncommitted.equals(aru);
            if (ok || System.nanoTime() > deadline) {
                assertEquals(committed, rc, "read_committed endOffsets " + when);
                assertEquals(uncommitted, ru, "read_uncommitted endOffsets " + when);
                assertEquals(committed, arc, "Admin.listOffsets READ_COMMITTED " + when);
                assertEquals(uncommitted, aru, "Admin.listOffsets READ_UNCOMMITTED " + when);
                return;
            }
            Thread.sleep(100);
        }
    }

    /** Waits (15 s at most) until no transaction is open or unmarked: read_committed end = read_uncommitted end. */
    private void awaitStable(String topic, int n) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (true) {
            Map<TopicPartition, Long> rc = consumerEndOffsets(topic, n, RC);
            Map<TopicPartition, Long> ru = consumerEndOffsets(topic, n, RU);
            if (rc.equals(ru)) {
                return;
            }
            assertTrue(System.nanoTime() < deadline, topic + ": read_committed end offsets " + rc
                    + " still behind read_uncommitted " + ru + " 15 s after the last transaction ended\n" + broker.tail());
            Thread.sleep(100);
        }
    }

    /** True when a ProducerFencedException or an InvalidProducerEpochException is in the cause chain. */
    private static boolean fenced(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof ProducerFencedException || c instanceof InvalidProducerEpochException) {
                return true;
            }
        }
        return false;
    }

    private static String chain(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = e; c != null; c = c.getCause()) {
            sb.append(sb.length() == 0 ? "" : " <- ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
        }
        return sb.toString();
    }

    // ------------------------------------------------------------------ 1. commit / abort / LSO

    @Test
    void commitAndAbortAreSeenByIsolationLevelAndAnOpenTransactionHoldsTheLastStableOffset() throws Exception {
        String topic = Broker.uniqueTopic("txn");
        int n = 2;
        try (Admin a = broker.admin(); KafkaProducer<String, String> p = txnProducer("txn-" + topic)) {
            Broker.createTopic(a, topic, n, Map.of());
            p.initTransactions();

            List<String> committed = new ArrayList<>();
            List<String> all = new ArrayList<>();
            long[] last = {-1, -1}; // last data record offset per partition
            // t even: commit, t odd: abort; t = 5 touches partition 1 only.
            for (int t = 0; t < 6; t++) {
                p.beginTransaction();
                List<Future<RecordMetadata>> fs = new ArrayList<>();
                List<String> vals = new ArrayList<>();
                for (int part : t == 5 ? new int[] {1} : new int[] {0, 1}) {
                    for (int i = 0; i < 2 + t; i++) {
                        String v = "t" + t + "-p" + part + "-" + i;
                        fs.add(p.send(new ProducerRecord<>(topic, part, "k" + i, v)));
                        vals.add(v);
                    }
                }
                p.flush(); // the records reach the log, also those of the transactions to abort
                long[] first = {-1, -1};
                for (int i = 0; i < fs.size(); i++) {
                    RecordMetadata m = fs.get(i).get(30, TimeUnit.SECONDS);
                    String r = rec(m.partition(), m.offset(), vals.get(i));
                    all.add(r);
                    if (t % 2 == 0) {
                        committed.add(r);
                    }
                    if (first[m.partition()] < 0) {
                        first[m.partition()] = m.offset();
                        // each earlier transaction on the partition ended with one control record (its marker)
                        assertEquals(last[m.partition()] + (last[m.partition()] < 0 ? 1 : 2), m.offset(),
                                "transaction " + t + " starts right after the previous one's marker on partition "
                                        + m.partition());
                    } else {
                        assertEquals(last[m.partition()] + 1, m.offset(), "offsets within a transaction are contiguous");
                    }
                    last[m.partition()] = m.offset();
                }
                if (t % 2 == 0) {
                    p.commitTransaction();
                } else {
                    p.abortTransaction();
                }
            }

            Map<TopicPartition, Long> end = new HashMap<>();
            for (int i = 0; i < n; i++) {
                end.put(new TopicPartition(topic, i), last[i] + 2); // + the last transaction's marker
            }
            assertEndOffsets(a, topic, n, end, end, "after the transactions ended");
            assertEquals(sorted(committed), readValues(topic, n, RC), "read_committed reads exactly the committed records");
            assertEquals(sorted(all), readValues(topic, n, RU), "read_uncommitted reads every data record");

            // A transaction left open: the read_committed end offset and a read_committed consumer stop before it.
            p.beginTransaction();
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            List<String> vals = new ArrayList<>();
            for (int part = 0; part < n; part++) {
                for (int i = 0; i < 3; i++) {
                    String v = "open-p" + part + "-" + i;
                    fs.add(p.send(new ProducerRecord<>(topic, part, "o" + i, v)));
                    vals.add(v);
                }
            }
            p.flush();
            List<String> open = new ArrayList<>();
            Map<TopicPartition, Long> openEnd = new HashMap<>();
            for (int i = 0; i < fs.size(); i++) {
                RecordMetadata m = fs.get(i).get(30, TimeUnit.SECONDS);
                open.add(rec(m.partition(), m.offset(), vals.get(i)));
                openEnd.merge(new TopicPartition(topic, m.partition()), m.offset() + 1, Math::max);
            }
            for (int part = 0; part < n; part++) {
                assertEquals(end.get(new TopicPartition(topic, part)) + 3, openEnd.get(new TopicPartition(topic, part)),
                        "open transaction's records follow the last marker on partition " + part);
            }
            assertEndOffsets(a, topic, n, end, openEnd, "while a transaction is open");

            List<TopicPartition> tps = partitions(topic, n);
            try (KafkaConsumer<String, String> c = consumer(RC)) {
                c.assign(tps);
                c.seekToBeginning(tps);
                List<String> seen = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                long settle = -1;
                while (true) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        seen.add(rec(r.partition(), r.offset(), r.value()));
                    }
                    boolean reached = tps.stream().allMatch(tp -> c.position(tp) >= end.get(tp));
                    if (reached && settle < 0) {
                        settle = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2000); // keep polling a while
                    }
                    if (settle > 0 && System.nanoTime() > settle) {
                        break;
                    }
                    assertTrue(System.nanoTime() < deadline, "read_committed consumer did not reach " + end);
                }
                assertEquals(sorted(committed), sorted(seen), "read_committed consumer stops before the open transaction");
                for (TopicPartition tp : tps) {
                    assertEquals(end.get(tp), c.position(tp), "read_committed position stays at the open transaction's start");
                }
                List<String> withOpen = new ArrayList<>(all);
                withOpen.addAll(open);
                assertEquals(sorted(withOpen), readValues(topic, n, RU), "read_uncommitted sees the open transaction");

                p.commitTransaction();
                Map<TopicPartition, Long> afterCommit = new HashMap<>();
                openEnd.forEach((tp, o) -> afterCommit.put(tp, o + 1));
                assertEndOffsets(a, topic, n, afterCommit, afterCommit, "after the open transaction committed");

                List<String> more = new ArrayList<>();
                deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!tps.stream().allMatch(tp -> c.position(tp) >= afterCommit.get(tp))) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        more.add(rec(r.partition(), r.offset(), r.value()));
                    }
                    assertTrue(System.nanoTime() < deadline, "read_committed consumer did not move past the commit: "
                            + more + "\n" + broker.tail());
                }
                assertEquals(sorted(open), sorted(more), "the committed transaction is then read");
            }
            committed.addAll(open);
            assertEquals(sorted(committed), readValues(topic, n, RC));
        }
        broker.assertAlive();
    }

    // ------------------------------------------------------------------ 2. zombie fencing

    @Test
    void aSecondProducerWithTheSameTransactionalIdFencesTheFirstAndAbortsItsTransaction() throws Exception {
        String topic = Broker.uniqueTopic("zombie");
        String tid = "zombie-" + topic;
        int n = 2;
        try (Admin a = broker.admin()) {
            Broker.createTopic(a, topic, n, Map.of());
            KafkaProducer<String, String> zombie = txnProducer(tid);
            List<String> zombieRecs = new ArrayList<>();
            Map<TopicPartition, Long> afterAbort = new HashMap<>();
            try {
                zombie.initTransactions();
                zombie.beginTransaction();
                for (int part = 0; part < n; part++) {
                    RecordMetadata m = zombie.send(new ProducerRecord<>(topic, part, "a", "zombie-" + part)).get(30, TimeUnit.SECONDS);
                    zombieRecs.add(rec(part, m.offset(), "zombie-" + part));
                    afterAbort.put(new TopicPartition(topic, part), m.offset() + 2); // record + abort marker
                }
                Map<TopicPartition, Long> open = new HashMap<>();
                afterAbort.forEach((tp, o) -> open.put(tp, o - 1));
                Map<TopicPartition, Long> zero = new HashMap<>();
                afterAbort.keySet().forEach(tp -> zero.put(tp, 0L));
                assertEndOffsets(a, topic, n, zero, open, "while the first producer's transaction is open");

                try (KafkaProducer<String, String> fresh = txnProducer(tid)) {
                    fresh.initTransactions(); // fences the zombie; its open transaction is aborted
                    assertEndOffsets(a, topic, n, afterAbort, afterAbort, "after the second producer's initTransactions");
                    assertEquals(List.of(), readValues(topic, n, RC), "the zombie's records were aborted");

                    // The zombie writes again to a partition of its transaction, then tries to commit.
                    Throwable sendErr = null;
                    try {
                        RecordMetadata m = zombie.send(new ProducerRecord<>(topic, 0, "a", "zombie-late")).get(30, TimeUnit.SECONDS);
                        fail("the fenced producer's send succeeded at offset " + m.offset());
                    } catch (ExecutionException | KafkaException e) {
                        sendErr = e instanceof ExecutionException ? e.getCause() : e;
                    }
                    System.err.println("fenced producer's send failed with " + chain(sendErr));
                    assertTrue(fenced(sendErr), "send of the fenced producer: want ProducerFenced/InvalidProducerEpoch, got "
                            + chain(sendErr));
                    KafkaException commitErr = assertThrows(KafkaException.class, zombie::commitTransaction);
                    System.err.println("fenced producer's commitTransaction failed with " + chain(commitErr));
                    assertTrue(fenced(commitErr), "commitTransaction of the fenced producer: want ProducerFenced/"
                            + "InvalidProducerEpoch, got " + chain(commitErr));

                    fresh.beginTransaction();
                    List<String> freshRecs = new ArrayList<>();
                    for (int part = 0; part < n; part++) {
                        RecordMetadata m = fresh.send(new ProducerRecord<>(topic, part, "b", "fresh-" + part)).get(30, TimeUnit.SECONDS);
                        freshRecs.add(rec(part, m.offset(), "fresh-" + part));
                        assertEquals(afterAbort.get(new TopicPartition(topic, part)), m.offset(),
                                "nothing of the zombie was appended after its abort marker");
                    }
                    fresh.commitTransaction();

                    Map<TopicPartition, Long> end = new HashMap<>();
                    afterAbort.forEach((tp, o) -> end.put(tp, o + 2));
                    assertEndOffsets(a, topic, n, end, end, "after the second producer committed");
                    assertEquals(sorted(freshRecs), readValues(topic, n, RC), "read_committed: only the second producer's records");
                    List<String> every = new ArrayList<>(zombieRecs);
                    every.addAll(freshRecs);
                    assertEquals(sorted(every), readValues(topic, n, RU),
                            "read_uncommitted: the zombie's aborted records and the second producer's, no late zombie write");

                    TransactionDescription d = a.describeTransactions(List.of(tid)).description(tid).get(30, TimeUnit.SECONDS);
                    assertEquals(TransactionState.COMPLETE_COMMIT, d.state(), "DescribeTransactions state");
                }
            } finally {
                zombie.close(Duration.ofSeconds(5));
            }
        }
        broker.assertAlive();
    }

    // ------------------------------------------------------------------ 3. consume-transform-produce

    private static String transform(String v) {
        return "OUT:" + v.toUpperCase(Locale.ROOT) + ":" + v.length();
    }

    @Test
    void consumeTransformProduceWithSendOffsetsToTransactionIsExactlyOnce() throws Exception {
        String in = Broker.uniqueTopic("ctp-in");
        String out = Broker.uniqueTopic("ctp-out");
        String group = "ctp-" + in;
        int n = 3;
        int total = 1000;
        try (Admin a = broker.admin()) {
            Broker.createTopic(a, in, n, Map.of());
            Broker.createTopic(a, out, n, Map.of());
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
            pp.put(ProducerConfig.ACKS_CONFIG, "all");
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            List<String> expected = new ArrayList<>();
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
                for (int i = 0; i < total; i++) {
                    String v = "record-" + i + "-" + "x".repeat(i % 17);
                    p.send(new ProducerRecord<>(in, i % n, "key-" + i, v));
                    expected.add("key-" + i + " " + transform(v));
                }
                p.flush();
            }
            Map<TopicPartition, Long> inEnd = consumerEndOffsets(in, n, RU);
            assertEquals(total, inEnd.values().stream().mapToLong(Long::longValue).sum());

            int abortedRecords = 0;
            int transactions = 0;
            try (KafkaConsumer<String, String> c = consumer(RC, group, new StringDeserializer());
                    KafkaProducer<String, String> p = txnProducer("ctp-" + in)) {
                p.initTransactions();
                c.subscribe(List.of(in));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
                while (!(c.assignment().size() == n && c.assignment().stream().allMatch(tp -> c.position(tp) >= inEnd.get(tp)))) {
                    assertTrue(System.nanoTime() < deadline, "consume-transform-produce did not finish: assignment "
                            + c.assignment() + "\n" + broker.tail());
                    ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                    if (recs.isEmpty()) {
                        continue;
                    }
                    p.beginTransaction();
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (ConsumerRecord<String, String> r : recs) {
                        p.send(new ProducerRecord<>(out, r.key(), transform(r.value())));
                        offsets.merge(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1),
                                (x, y) -> x.offset() >= y.offset() ? x : y);
                    }
                    p.sendOffsetsToTransaction(offsets, c.groupMetadata());
                    if (abortedRecords == 0) {
                        // The first transaction is aborted: its output is never read committed and its offsets are
                        // not committed, so the records are processed again.
                        p.flush();
                        p.abortTransaction();
                        abortedRecords = recs.count();
                        Map<TopicPartition, OffsetAndMetadata> com = c.committed(c.assignment(), Duration.ofSeconds(30));
                        for (TopicPartition tp : c.assignment()) {
                            assertNull(com.get(tp), "offsets of an aborted transaction are not committed: " + tp);
                        }
                        c.seekToBeginning(c.assignment());
                    } else {
                        p.commitTransaction();
                        transactions++;
                    }
                }
            }
            assertTrue(abortedRecords > 0);
            System.err.println("consume-transform-produce: " + transactions + " committed transactions, "
                    + abortedRecords + " records in the aborted one");

            awaitStable(out, n);
            // The last transaction's offsets become visible once its marker is written (Kafka: after EndTxn's answer).
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            Map<TopicPartition, Long> committedOffsets;
            while (true) {
                committedOffsets = a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata()
                        .get(30, TimeUnit.SECONDS).entrySet().stream()
                        .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
                if (committedOffsets.equals(inEnd) || System.nanoTime() > deadline) {
                    break;
                }
                Thread.sleep(100);
            }
            assertEquals(inEnd, committedOffsets, "the group's committed offsets are the input's end offsets");

            List<String> outCommitted = readAll(out, n, RC, new StringDeserializer()).stream()
                    .map(r -> r.key() + " " + r.value()).collect(Collectors.toList());
            assertEquals(sorted(expected), sorted(outCommitted), "read_committed output: every input record exactly once");
            int uncommitted = readAll(out, n, RU, new StringDeserializer()).size();
            assertEquals(total + abortedRecords, uncommitted, "read_uncommitted output also has the aborted transaction's records");
        }
        broker.assertAlive();
    }

    // ------------------------------------------------------------------ 4. Kafka Streams exactly_once_v2

    /** The word-count tokenisation, shared by the topology and the expectation. */
    static List<String> words(String line) {
        return Arrays.stream(line.toLowerCase(Locale.ROOT).split("[^a-z0-9]+")).filter(w -> !w.isEmpty())
                .collect(Collectors.toList());
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void kafkaStreamsExactlyOnceWordCountSurvivesABrokerKill() throws Exception {
        Path corpus = Paths.get("/usr/share/common-licenses/GPL-3");
        List<String> lines = Files.readAllLines(corpus, StandardCharsets.UTF_8);
        Map<String, Long> expected = new TreeMap<>();
        lines.forEach(l -> words(l).forEach(w -> expected.merge(w, 1L, Long::sum)));
        assertTrue(expected.size() > 500 && expected.get("the") > 300, "corpus " + corpus);

        String in = Broker.uniqueTopic("wc-in");
        String out = Broker.uniqueTopic("wc-out");
        String appId = "wc-" + in;
        int n = 2;
        Path stateDir = Files.createTempDirectory("frieda-streams-");
        try (Admin a = broker.admin()) {
            Broker.createTopic(a, in, n, Map.of());
            Broker.createTopic(a, out, n, Map.of());

            StreamsBuilder b = new StreamsBuilder();
            b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                    .flatMapValues(JavaTransactionsTest::words)
                    .groupBy((k, w) -> w, Grouped.with(Serdes.String(), Serdes.String()))
                    .count(Materialized.as("word-counts"))
                    .toStream()
                    .to(out, Produced.with(Serdes.String(), Serdes.Long()));
            Properties sp = new Properties();
            sp.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
            sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
            sp.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
            sp.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
            sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
            sp.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
            sp.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
            sp.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
            sp.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 20000);
            sp.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);

            List<Throwable> streamErrors = Collections.synchronizedList(new ArrayList<>());
            List<String> transitions = Collections.synchronizedList(new ArrayList<>());
            KafkaStreams streams = new KafkaStreams(b.build(), sp);
            streams.setStateListener((now, before) -> transitions.add(before + "->" + now));
            streams.setUncaughtExceptionHandler(e -> {
                streamErrors.add(e);
                return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
            });
            try {
                streams.start();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (streams.state() != KafkaStreams.State.RUNNING) {
                    assertTrue(System.nanoTime() < deadline, "streams not RUNNING after 60 s: " + transitions + "\n" + broker.tail());
                    Thread.sleep(100);
                }

                // The corpus, one record per line (key: line number), paced so that the kill lands mid-run.
                Properties pp = new Properties();
                pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
                pp.put(ProducerConfig.ACKS_CONFIG, "all");
                pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
                pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000");
                pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
                pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
                AtomicInteger sent = new AtomicInteger();
                AtomicReference<Throwable> producerError = new AtomicReference<>();
                Thread producer = new Thread(() -> {
                    try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
                        List<Future<RecordMetadata>> fs = new ArrayList<>();
                        for (int i = 0; i < lines.size(); i++) {
                            fs.add(p.send(new ProducerRecord<>(in, Integer.toString(i), lines.get(i))));
                            sent.incrementAndGet();
                            Thread.sleep(25);
                        }
                        p.flush();
                        for (Future<RecordMetadata> f : fs) {
                            f.get();
                        }
                    } catch (Throwable e) {
                        producerError.set(e);
                    }
                }, "corpus-producer");
                producer.start();

                if (broker.external()) {
                    System.err.println("external broker: the SIGKILL and restart are skipped");
                } else {
                    // Two crashes: once a third and once two thirds of the corpus are sent, each while committed
                    // output exists and a transaction of Streams is open on the output (read_uncommitted end
                    // beyond read_committed end); down for 1 s, then for 4 s.
                    int[] killAt = {lines.size() / 3, 2 * lines.size() / 3};
                    long[] downMs = {1000, 4000};
                    for (int k = 0; k < killAt.length; k++) {
                        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                        while (true) {
                            Map<TopicPartition, Long> rc = consumerEndOffsets(out, n, RC);
                            Map<TopicPartition, Long> ru = consumerEndOffsets(out, n, RU);
                            long rcSum = rc.values().stream().mapToLong(Long::longValue).sum();
                            boolean open = rc.keySet().stream().anyMatch(tp -> ru.get(tp) > rc.get(tp));
                            if (sent.get() >= killAt[k] && rcSum > 0 && open) {
                                System.err.println("SIGKILL the broker after " + sent.get() + " of " + lines.size()
                                        + " lines; output end offsets read_committed " + rc + ", read_uncommitted " + ru);
                                break;
                            }
                            assertTrue(System.nanoTime() < deadline, "no committed output and open transaction after 60 s: "
                                    + transitions + "\n" + broker.tail());
                            Thread.sleep(20);
                        }
                        broker.sigkill();
                        Thread.sleep(downMs[k]);
                        broker.restart();
                        System.err.println("broker restarted after " + downMs[k] + " ms down");
                    }
                }
                producer.join(TimeUnit.SECONDS.toMillis(150));
                assertFalse(producer.isAlive(), "the corpus producer did not finish");
                if (producerError.get() != null) {
                    throw new AssertionError("corpus producer failed: " + chain(producerError.get()) + "\n" + broker.tail(),
                            producerError.get());
                }

                // The input holds every line exactly once.
                Map<String, String> input = new HashMap<>();
                for (ConsumerRecord<String, String> r : readAll(in, n, RC, new StringDeserializer())) {
                    String prev = input.put(r.key(), r.value());
                    assertNull(prev, "input line " + r.key() + " twice");
                }
                assertEquals(lines.size(), input.size(), "input records");
                for (int i = 0; i < lines.size(); i++) {
                    assertEquals(lines.get(i), input.get(Integer.toString(i)), "input line " + i);
                }

                // Wait until Streams committed the whole input and its output counts settle.
                Map<TopicPartition, Long> inEnd = consumerEndOffsets(in, n, RC);
                deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                Map<String, Long> counts = Map.of();
                while (true) {
                    Map<TopicPartition, Long> committed = a.listConsumerGroupOffsets(appId).partitionsToOffsetAndMetadata()
                            .get(30, TimeUnit.SECONDS).entrySet().stream()
                            .filter(e -> e.getKey().topic().equals(in))
                            .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
                    if (committed.equals(inEnd)) {
                        counts = lastCounts(out, n);
                        if (counts.equals(expected)) {
                            break;
                        }
                    }
                    if (System.nanoTime() > deadline) {
                        System.err.println("streams transitions " + transitions + ", errors " + streamErrors);
                        fail("streams did not finish within 120 s: committed " + committed + " of " + inEnd
                                + "; " + diff(expected, counts) + "\n" + broker.tail());
                    }
                    Thread.sleep(500);
                }
            } finally {
                streams.close(Duration.ofSeconds(30));
                System.err.println("streams transitions " + transitions);
                for (Throwable e : streamErrors) {
                    System.err.println("streams thread died: " + chain(e));
                }
            }
            // After Streams stopped: the committed output, last count per word, is the plain Java word count.
            awaitStable(out, n);
            Map<String, Long> counts = lastCounts(out, n);
            System.err.println("word-count output: " + readAll(out, n, RC, new LongDeserializer()).size()
                    + " records read_committed, " + readAll(out, n, RU, new LongDeserializer()).size() + " read_uncommitted");
            assertEquals(expected, counts, diff(expected, counts));
        } finally {
            deleteTree(stateDir);
        }
        broker.assertAlive();
    }

    /** The last count per word in the read_committed output. */
    private Map<String, Long> lastCounts(String topic, int n) throws Exception {
        Map<String, Long> m = new TreeMap<>();
        for (ConsumerRecord<String, Long> r : readAll(topic, n, RC, new LongDeserializer())) {
            m.put(r.key(), r.value());
        }
        return m;
    }

    private static String diff(Map<String, Long> want, Map<String, Long> got) {
        List<String> d = new ArrayList<>();
        for (Map.Entry<String, Long> e : want.entrySet()) {
            if (!e.getValue().equals(got.get(e.getKey()))) {
                d.add(e.getKey() + ": want " + e.getValue() + " got " + got.get(e.getKey()));
            }
        }
        for (String k : got.keySet()) {
            if (!want.containsKey(k)) {
                d.add(k + ": not in the corpus, got " + got.get(k));
            }
        }
        return d.size() + " words differ" + (d.isEmpty() ? "" : ", e.g. " + d.subList(0, Math.min(20, d.size())));
    }

    private static void deleteTree(Path p) {
        try (var s = Files.walk(p)) {
            s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (Exception e) {
            // best effort
        }
    }
}
