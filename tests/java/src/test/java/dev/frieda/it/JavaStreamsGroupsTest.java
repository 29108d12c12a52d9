package dev.frieda.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.internals.Exit;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.tools.streams.StreamsGroupCommand;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Kafka Streams 4.4 with {@code group.protocol=streams} (KIP-1071): the broker validates the
 * topology, creates its repartition and changelog topics, assigns tasks to the application's
 * instances and moves them when an instance leaves; Admin and kafka-streams-groups show the group.
 * A word count (a repartition through groupBy, a state store with a changelog) must produce every
 * word's exact count, across the move; at the end every input record is committed and the empty
 * group is deleted.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class JavaStreamsGroupsTest {
    private static final int PARTITIONS = 4;
    private Broker broker;

    @BeforeEach
    void start() throws Exception {
        broker = Broker.start();
    }

    @AfterEach
    void stop() throws Exception {
        broker.close();
    }

    private static List<String> words(String line) {
        return Arrays.stream(line.split(" ")).filter(w -> !w.isEmpty()).toList();
    }

    /** Lines {@code from} to {@code to}: each names three words of a 41-word vocabulary. */
    private static List<String> corpus(int from, int to) {
        List<String> lines = new ArrayList<>();
        for (int i = from; i < to; i++) {
            lines.add("w" + (i % 41) + " w" + (i * 7 % 41) + " w" + (i * 13 % 17));
        }
        return lines;
    }

    private Topology wordCount(String in, String out) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(JavaStreamsGroupsTest::words)
                .groupBy((k, w) -> w, Grouped.with("by-word", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    private KafkaStreams instance(String appId, Topology t, String name, List<Throwable> errors) throws Exception {
        Path stateDir = Files.createTempDirectory("frieda-streams-" + name + "-");
        Properties sp = new Properties();
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        sp.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        sp.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        sp.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        sp.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        sp.put(StreamsConfig.CLIENT_ID_CONFIG, name);
        KafkaStreams s = new KafkaStreams(t, sp);
        s.setUncaughtExceptionHandler(e -> {
            errors.add(e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        return s;
    }

    private void awaitRunning(KafkaStreams... all) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        for (KafkaStreams s : all) {
            while (s.state() != KafkaStreams.State.RUNNING) {
                assertTrue(System.nanoTime() < deadline, "not RUNNING after 60 s: " + s.state() + "\n" + broker.tail());
                Thread.sleep(100);
            }
        }
    }

    private void produce(String topic, List<String> lines, int offset) throws Exception {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            for (int i = 0; i < lines.size(); i++) {
                p.send(new ProducerRecord<>(topic, Integer.toString(offset + i), lines.get(i))).get();
            }
        }
    }

    /** Reads {@code out} from the start until every word's latest count is {@code expected}'s. */
    private void awaitCounts(String out, Map<String, Long> expected) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, "reader-" + out + "-" + System.nanoTime());
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
        Map<String, Long> latest = new TreeMap<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of(out));
            while (!latest.equals(expected)) {
                assertTrue(System.nanoTime() < deadline, "counts after 90 s differ: expected " + expected
                        + "\ngot " + latest + "\n" + broker.tail());
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) {
                    latest.put(r.key(), r.value());
                }
            }
        }
    }

    private static Map<String, Long> counts(List<String> lines) {
        Map<String, Long> m = new TreeMap<>();
        lines.forEach(l -> words(l).forEach(w -> m.merge(w, 1L, Long::sum)));
        return m;
    }

    private static final class ToolExit extends RuntimeException {
        final int code;

        ToolExit(int code, String msg) {
            super(msg);
            this.code = code;
        }
    }

    /** Runs kafka-streams-groups in this JVM and returns what it printed. */
    private static String streamsGroupsTool(String... args) {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        PrintStream old = System.out;
        // The tool ends with Exit.exit(0) on success.
        Exit.setExitProcedure((code, msg) -> {
            throw new ToolExit(code, msg);
        });
        try (PrintStream ps = new PrintStream(buf, true, StandardCharsets.UTF_8)) {
            System.setOut(ps);
            StreamsGroupCommand.main(args);
        } catch (ToolExit e) {
            assertEquals(0, e.code, "kafka-streams-groups exited with " + e.code + ": " + e.getMessage()
                    + "\n" + buf.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(old);
            Exit.resetExitProcedure();
        }
        String out = buf.toString(StandardCharsets.UTF_8);
        System.err.println("kafka-streams-groups " + String.join(" ", args) + "\n" + out);
        return out;
    }

    private StreamsGroupDescription describe(Admin a, String appId) throws Exception {
        return a.describeStreamsGroups(List.of(appId)).describedGroups().get(appId).get(30, TimeUnit.SECONDS);
    }

    /** Active tasks of every member, as "subtopology_partition". */
    private static Map<String, Set<String>> activeTasks(StreamsGroupDescription d) {
        Map<String, Set<String>> m = new HashMap<>();
        for (StreamsGroupMemberDescription member : d.members()) {
            Set<String> ts = new HashSet<>();
            member.assignment().activeTasks().forEach(t -> t.partitions().forEach(p -> ts.add(t.subtopologyId() + "_" + p)));
            m.put(member.memberId(), ts);
        }
        return m;
    }

    private StreamsGroupDescription awaitStable(Admin a, String appId, int members) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            StreamsGroupDescription d = describe(a, appId);
            if (d.groupState() == GroupState.STABLE && d.members().size() == members) {
                return d;
            }
            assertTrue(System.nanoTime() < deadline, "group not Stable with " + members + " members: " + d);
            Thread.sleep(200);
        }
    }

    @Test
    void wordCountRunsOnTwoInstancesAndSurvivesOneLeaving() throws Exception {
        String in = Broker.uniqueTopic("sg-in");
        String out = Broker.uniqueTopic("sg-out");
        String appId = "sg-" + in;
        List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        try (Admin a = broker.admin()) {
            Broker.createTopic(a, in, PARTITIONS, Map.of());
            Broker.createTopic(a, out, PARTITIONS, Map.of());
            Topology t = wordCount(in, out);
            KafkaStreams first = instance(appId, t, "first", errors);
            KafkaStreams second = instance(appId, t, "second", errors);
            try {
                first.start();
                second.start();
                awaitRunning(first, second);

                // The broker created the repartition and changelog topics with the source's count.
                for (String internal : List.of(appId + "-by-word-repartition", appId + "-counts-changelog")) {
                    TopicDescription d = a.describeTopics(List.of(internal)).allTopicNames().get(30, TimeUnit.SECONDS).get(internal);
                    assertEquals(PARTITIONS, d.partitions().size(), internal);
                }

                List<String> batch1 = corpus(0, 300);
                produce(in, batch1, 0);
                awaitCounts(out, counts(batch1));

                // Two members, each with tasks, every task of the two subtopologies once.
                StreamsGroupDescription d = awaitStable(a, appId, 2);
                Map<String, Set<String>> tasks = activeTasks(d);
                tasks.values().forEach(ts -> assertTrue(!ts.isEmpty(), "a member without tasks: " + tasks));
                List<String> all = tasks.values().stream().flatMap(Set::stream).sorted().toList();
                assertEquals(2 * PARTITIONS, all.size(), "tasks " + tasks);
                assertEquals(2 * PARTITIONS, new HashSet<>(all).size(), "a task given twice: " + tasks);
                assertEquals(2, d.subtopologies().size(), "subtopologies " + d.subtopologies());

                Set<String> listed = a.listGroups(ListGroupsOptions.forStreamsGroups()).all().get(30, TimeUnit.SECONDS)
                        .stream().map(GroupListing::groupId).collect(Collectors.toSet());
                assertTrue(listed.contains(appId), "listGroups(streams) " + listed);
                GroupListing listing = a.listGroups().all().get(30, TimeUnit.SECONDS).stream()
                        .filter(g -> g.groupId().equals(appId)).findFirst().orElseThrow();
                assertEquals(GroupType.STREAMS, listing.type().orElseThrow());

                String list = streamsGroupsTool("--bootstrap-server", broker.bootstrap, "--list");
                assertTrue(list.lines().anyMatch(l -> l.trim().startsWith(appId)), list);
                String members = streamsGroupsTool("--bootstrap-server", broker.bootstrap, "--describe", "--members", "--group", appId);
                assertEquals(2, members.lines().filter(l -> l.startsWith(appId)).count(), members);
                String offsets = streamsGroupsTool("--bootstrap-server", broker.bootstrap, "--describe", "--offsets", "--group", appId);
                assertTrue(offsets.contains(in), offsets);

                // One instance leaves: the other takes every task, and the counts go on from the
                // changelog.
                second.close(Duration.ofSeconds(30));
                StreamsGroupDescription after = awaitStable(a, appId, 1);
                assertEquals(2 * PARTITIONS, activeTasks(after).values().iterator().next().size(), "tasks " + activeTasks(after));
                List<String> batch2 = corpus(300, 500);
                produce(in, batch2, 300);
                List<String> both = new ArrayList<>(batch1);
                both.addAll(batch2);
                awaitCounts(out, counts(both));
                assertTrue(errors.isEmpty(), "stream thread errors: " + errors);

                // Closed, the application has committed every input record, and the empty group
                // can be deleted.
                first.close(Duration.ofSeconds(30));
                Map<TopicPartition, OffsetAndMetadata> committed = a.listStreamsGroupOffsets(
                        Map.of(appId, new ListStreamsGroupOffsetsSpec())).partitionsToOffsetAndMetadata(appId)
                        .get(30, TimeUnit.SECONDS);
                long inputCommitted = committed.entrySet().stream().filter(e -> e.getKey().topic().equals(in))
                        .mapToLong(e -> e.getValue().offset()).sum();
                assertEquals(both.size(), inputCommitted, "committed input offsets " + committed);
                assertEquals(GroupState.EMPTY, describe(a, appId).groupState());
                a.deleteStreamsGroups(List.of(appId)).all().get(30, TimeUnit.SECONDS);
                Set<String> left = a.listGroups().all().get(30, TimeUnit.SECONDS).stream()
                        .map(GroupListing::groupId).collect(Collectors.toSet());
                assertTrue(!left.contains(appId), "deleted group still listed: " + left);
            } finally {
                first.close(Duration.ofSeconds(30));
                second.close(Duration.ofSeconds(30));
            }
        }
    }
}
