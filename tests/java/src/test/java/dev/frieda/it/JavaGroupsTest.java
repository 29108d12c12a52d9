package dev.frieda.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.internals.Exit; // moved to internals in Kafka 4.4
import org.apache.kafka.tools.consumer.group.ConsumerGroupCommand;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** KafkaConsumer in a group (subscribe + commitSync), group admin, and Kafka's kafka-consumer-groups tool. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JavaGroupsTest {
    private Broker broker;

    @BeforeEach
    void start() throws Exception {
        broker = Broker.start();
    }

    @AfterEach
    void stop() throws Exception {
        broker.close();
    }

    private Admin admin() {
        return broker.admin();
    }

    private void produce(String topic, int from, int n, int partitions) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            for (int i = from; i < from + n; i++) {
                prod.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i));
            }
            prod.flush();
        }
    }

    private KafkaConsumer<String, String> consumer(String group, String clientId) {
        return consumer(group, clientId, false);
    }

    /**
     * A group consumer; {@code kip848}: {@code group.protocol=consumer} (the session and
     * heartbeat timing are then the broker's, and the assignor the broker's {@code uniform}).
     */
    private KafkaConsumer<String, String> consumer(String group, String clientId, boolean kip848) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if (kip848) {
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        } else {
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "500");
        }
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    private Map<TopicPartition, Long> endOffsets(Admin a, String topic, int partitions) throws Exception {
        Map<TopicPartition, OffsetSpec> req = new HashMap<>();
        for (int i = 0; i < partitions; i++) {
            req.put(new TopicPartition(topic, i), OffsetSpec.latest());
        }
        return a.listOffsets(req).all().get(30, TimeUnit.SECONDS).entrySet().stream()
                .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }

    private Map<TopicPartition, Long> committed(Admin a, String group) throws Exception {
        return a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS)
                .entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().offset()));
    }

    /** Runs kafka-consumer-groups in this JVM and returns what it printed. */
    private static String consumerGroupsTool(String... args) {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream old = System.out;
        Exit.setExitProcedure((code, msg) -> {
            throw new AssertionError("kafka-consumer-groups exited with " + code + ": " + msg);
        });
        try (PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            System.setOut(ps);
            ConsumerGroupCommand.main(args);
        } finally {
            System.setOut(old);
            Exit.resetExitProcedure();
        }
        String out = buf.toString(StandardCharsets.UTF_8);
        System.err.println("kafka-consumer-groups " + String.join(" ", args) + "\n" + out);
        return out;
    }

    @Test
    void twoSubscribedConsumersCommitSyncAndToolShowsLag() throws Exception {
        twoMembersCommitSyncAndToolShowsLag(false, false);
    }

    /**
     * The same with the KIP-848 protocol ({@code group.protocol=consumer}): the broker assigns
     * the four partitions two and two, every record is consumed and committed, and
     * kafka-consumer-groups lists and describes the group (through ConsumerGroupDescribe).
     */
    @Test
    void twoConsumerProtocolMembersCommitSyncAndToolShowsLag() throws Exception {
        twoMembersCommitSyncAndToolShowsLag(true, true);
    }

    /**
     * One classic member and one of the consumer protocol in the same group (KIP-848's upgrade
     * path, as Kafka 4.3 allows it): the broker's assignor splits the partitions between them
     * whichever joins first, every record is consumed and committed, and the tool describes it.
     */
    @Test
    void classicAndConsumerProtocolMembersShareOneGroup() throws Exception {
        twoMembersCommitSyncAndToolShowsLag(false, true);
    }

    private void twoMembersCommitSyncAndToolShowsLag(boolean kip848first, boolean kip848second) throws Exception {
        boolean kip848 = kip848first && kip848second;
        boolean mixed = kip848first != kip848second;
        String topic = Broker.uniqueTopic(mixed ? "jgroupsmixed" : kip848 ? "jgroups848" : "jgroups");
        String group = "jg-" + topic;
        int partitions = 4;
        try (Admin a = admin()) {
            a.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
            produce(topic, 0, 1000, partitions);

            Map<String, Integer> seen = new ConcurrentHashMap<>();
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> threads = new ArrayList<>();
            List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
            Map<String, Set<Integer>> held = new ConcurrentHashMap<>();
            for (int c = 0; c < 2; c++) {
                String clientId = "java-member-" + c;
                boolean memberKip848 = c == 0 ? kip848first : kip848second;
                Thread t = new Thread(() -> {
                    try (KafkaConsumer<String, String> consumer = consumer(group, clientId, memberKip848)) {
                        consumer.subscribe(List.of(topic));
                        boolean uncommitted = false;
                        while (!stop.get()) {
                            ConsumerRecords<String, String> recs = consumer.poll(Duration.ofMillis(200));
                            for (ConsumerRecord<String, String> r : recs) {
                                seen.merge(r.partition() + "@" + r.offset(), 1, Integer::sum);
                            }
                            if (!recs.isEmpty() || uncommitted) {
                                try {
                                    consumer.commitSync();
                                    uncommitted = false;
                                } catch (CommitFailedException e) {
                                    // A commit racing a rebalance fails, on Kafka too (the Java
                                    // client maps STALE_MEMBER_EPOCH and a classic member's
                                    // ILLEGAL_GENERATION to this): commit again on the next
                                    // round; the checks below still need every record consumed
                                    // and committed.
                                    System.err.println(clientId + ": " + e.getMessage());
                                    uncommitted = true;
                                }
                            }
                            held.put(clientId, consumer.assignment().stream().map(TopicPartition::partition)
                                    .collect(Collectors.toSet()));
                        }
                    } catch (Throwable e) {
                        errors.add(e);
                    }
                });
                t.start();
                threads.add(t);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            Map<TopicPartition, Long> ends = endOffsets(a, topic, partitions);
            while (System.nanoTime() < deadline) {
                boolean split = held.size() == 2 && held.values().stream().allMatch(s -> s.size() == 2);
                if (split && seen.size() == 1000 && committed(a, group).equals(ends)) {
                    break;
                }
                Thread.sleep(200);
            }
            assertTrue(errors.isEmpty(), "consumer errors: " + errors);
            assertEquals(1000, seen.size(), "every record consumed");
            assertEquals(ends, committed(a, group));
            assertEquals(2, held.size());
            Set<Integer> all = new HashSet<>();
            held.values().forEach(all::addAll);
            assertEquals(Set.of(0, 1, 2, 3), all);

            ConsumerGroupDescription d = a.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
            assertEquals(GroupState.STABLE, d.groupState());
            assertEquals(2, d.members().size());

            // kafka-consumer-groups: --list shows the group; --describe shows lag 0, then the lag of new records.
            assertTrue(consumerGroupsTool("--bootstrap-server", broker.bootstrap, "--list").lines()
                    .anyMatch(l -> l.trim().equals(group)));
            // While the members are active: each partition shows its consumer, host and client id, lag 0.
            String active = consumerGroupsTool("--bootstrap-server", broker.bootstrap, "--describe", "--group", group);
            int activeRows = 0;
            for (String line : active.lines().toList()) {
                String[] f = line.trim().split("\\s+");
                if (f.length >= 9 && f[0].equals(group) && f[1].equals(topic)) {
                    assertEquals("0", f[5], line);
                    // Classic member ids start with the client id; KIP-848 member ids are UUIDs (and
                    // so is a classic member's that joined a consumer group).
                    assertTrue(mixed || (kip848 ? f[6].length() >= 22 : f[6].startsWith("java-member-")), line);
                    assertTrue(f[7].contains("127.0.0.1"), line);
                    assertTrue(f[8].startsWith("java-member-"), line);
                    activeRows++;
                }
            }
            assertEquals(partitions, activeRows, active);
            stop.set(true);
            for (Thread t : threads) {
                t.join(30000);
            }
            produce(topic, 1000, 40, partitions); // 10 more per partition, not consumed
            String out = consumerGroupsTool("--bootstrap-server", broker.bootstrap, "--describe", "--group", group);
            Map<TopicPartition, Long> endsNow = endOffsets(a, topic, partitions);
            int rows = 0;
            for (String line : out.lines().toList()) {
                String[] f = line.trim().split("\\s+");
                if (f.length >= 6 && f[0].equals(group) && f[1].equals(topic)) {
                    int p = Integer.parseInt(f[2]);
                    assertEquals(String.valueOf(ends.get(new TopicPartition(topic, p))), f[3], line);
                    assertEquals(String.valueOf(endsNow.get(new TopicPartition(topic, p))), f[4], line);
                    assertEquals("10", f[5], "lag of partition " + p + ": " + line);
                    rows++;
                }
            }
            assertEquals(partitions, rows, out);
            // An empty group can be deleted (and only then).
            a.deleteConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS);
            assertTrue(committed(a, group).isEmpty());
        }
    }

    @Test
    void nonEmptyGroupCannotBeDeletedAndMembersShowInDescribe() throws Exception {
        String topic = Broker.uniqueTopic("jgroups-del");
        String group = "jg-" + topic;
        try (Admin a = admin(); KafkaConsumer<String, String> c = consumer(group, "the-member")) {
            a.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(30, TimeUnit.SECONDS);
            produce(topic, 0, 10, 2);
            c.subscribe(List.of(topic));
            int got = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (got < 10 && System.nanoTime() < deadline) {
                got += c.poll(Duration.ofMillis(200)).count();
            }
            assertEquals(10, got);
            c.commitSync(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(5, "meta")));
            assertEquals("meta", c.committed(Set.of(new TopicPartition(topic, 0))).get(new TopicPartition(topic, 0)).metadata());
            ConsumerGroupDescription d = a.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
            assertEquals("the-member", d.members().iterator().next().clientId());
            assertEquals(2, d.members().iterator().next().assignment().topicPartitions().size());
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> a.deleteConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(GroupNotEmptyException.class, e.getCause());
        }
    }
}
