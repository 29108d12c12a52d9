package dev.frieda.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JavaClientsTest {
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

    record Sent(byte[] key, byte[] value, List<Header> headers, long timestamp) {}

    private static List<Sent> sampleRecords(int n, long now) {
        Random rnd = new Random(42);
        List<Sent> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] key = i % 11 == 3 ? null : ("key-" + (i % 17)).getBytes(StandardCharsets.UTF_8);
            byte[] value;
            if (i % 9 == 2) {
                value = new byte[0];
            } else if (i % 37 == 7) {
                value = new byte[100 * 1024];
                rnd.nextBytes(value);
            } else if (i % 5 == 1) {
                value = new byte[1 + rnd.nextInt(300)];
                rnd.nextBytes(value);
            } else {
                value = ("value " + i + " ünïcødé ✓").getBytes(StandardCharsets.UTF_8);
            }
            List<Header> headers = new ArrayList<>();
            switch (i % 4) {
                case 1 -> {
                    headers.add(new RecordHeader("h1", ("v" + i).getBytes(StandardCharsets.UTF_8)));
                    headers.add(new RecordHeader("bin", new byte[] {0, (byte) 255, 10, 13}));
                }
                case 2 -> {
                    headers.add(new RecordHeader("dup", "a".getBytes(StandardCharsets.UTF_8)));
                    headers.add(new RecordHeader("dup", "b".getBytes(StandardCharsets.UTF_8)));
                    headers.add(new RecordHeader("empty", new byte[0]));
                }
                case 3 -> headers.add(new RecordHeader("null-value", null));
                default -> { }
            }
            out.add(new Sent(key, value, headers, now - 600_000 + i * 7L));
        }
        return out;
    }

    private static void assertHeadersEqual(List<Header> want, Header[] got, String where) {
        assertEquals(want.size(), got.length, where + ": header count");
        for (int i = 0; i < got.length; i++) {
            assertEquals(want.get(i).key(), got[i].key(), where + ": header key " + i);
            assertArrayEquals(want.get(i).value(), got[i].value(), where + ": header value " + i);
        }
    }

    @Test
    void idempotentProducerAndAssignedConsumerRoundTripByteForByte() throws Exception {
        String topic = Broker.uniqueTopic("roundtrip");
        try (Admin a = admin()) {
            Broker.createTopic(a, topic, 3, Map.of());
        }
        List<Sent> sent = sampleRecords(500, System.currentTimeMillis());
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        // defaults kept on purpose: enable.idempotence=true, acks=all
        Map<TopicPartition, Map<Long, Sent>> acked = new HashMap<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (Sent s : sent) {
                futures.add(producer.send(new ProducerRecord<>(topic, null, s.timestamp(), s.key(), s.value(), s.headers())));
            }
            producer.flush();
            for (int i = 0; i < sent.size(); i++) {
                RecordMetadata md = futures.get(i).get(30, TimeUnit.SECONDS);
                assertTrue(md.hasOffset());
                assertEquals(sent.get(i).timestamp(), md.timestamp(), "CreateTime in the ack");
                Sent prev = acked.computeIfAbsent(new TopicPartition(topic, md.partition()), k -> new HashMap<>())
                        .put(md.offset(), sent.get(i));
                assertEquals(null, prev, "two records acknowledged at " + md.partition() + "@" + md.offset());
            }
        }
        assertEquals(3, acked.size(), "keyed records should spread over all 3 partitions");

        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        cp.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        Map<TopicPartition, Map<Long, ConsumerRecord<byte[], byte[]>>> got = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
            Collection<TopicPartition> tps = acked.keySet();
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps, Duration.ofSeconds(30));
            for (TopicPartition tp : tps) {
                assertEquals((long) acked.get(tp).size(), ends.get(tp), "end offset of " + tp);
                assertEquals(0L, consumer.beginningOffsets(List.of(tp), Duration.ofSeconds(30)).get(tp));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (tps.stream().anyMatch(tp -> consumer.position(tp, Duration.ofSeconds(30)) < ends.get(tp))) {
                assertTrue(System.nanoTime() < deadline, "timed out reading back; got " + got.values().stream().mapToInt(Map::size).sum());
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    got.computeIfAbsent(new TopicPartition(r.topic(), r.partition()), k -> new HashMap<>()).put(r.offset(), r);
                }
            }
        }
        int n = 0;
        for (Map.Entry<TopicPartition, Map<Long, Sent>> e : acked.entrySet()) {
            for (Map.Entry<Long, Sent> o : e.getValue().entrySet()) {
                String where = e.getKey() + "@" + o.getKey();
                ConsumerRecord<byte[], byte[]> r = got.getOrDefault(e.getKey(), Map.of()).get(o.getKey());
                assertNotNull(r, where + " acknowledged but not read back");
                Sent s = o.getValue();
                assertArrayEquals(s.key(), r.key(), where + ": key");
                assertArrayEquals(s.value(), r.value(), where + ": value");
                assertHeadersEqual(s.headers(), r.headers().toArray(), where);
                assertEquals(TimestampType.CREATE_TIME, r.timestampType(), where);
                assertEquals(s.timestamp(), r.timestamp(), where + ": timestamp");
                n++;
            }
        }
        assertEquals(sent.size(), n);
        broker.assertAlive();
    }

    @Test
    void adminCreatesAndDescribesTopic() throws Exception {
        String topic = Broker.uniqueTopic("admin");
        try (Admin a = admin()) {
            Broker.createTopic(a, topic, 4, Map.of("retention.ms", "3600000", "cleanup.policy", "delete"));
            TopicDescription d = a.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
            assertEquals(4, d.partitions().size());
            assertFalse(d.isInternal());

            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config c = a.describeConfigs(List.of(res)).all().get(30, TimeUnit.SECONDS).get(res);
            assertEquals("3600000", c.get("retention.ms").value());
            assertEquals("delete", c.get("cleanup.policy").value());
            assertNotNull(c.get("segment.bytes"), "segment.bytes listed");

            ExecutionException dup = assertThrows(ExecutionException.class, () ->
                    a.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(TopicExistsException.class, dup.getCause());

            Set<String> names = a.listTopics().names().get(30, TimeUnit.SECONDS);
            assertTrue(names.contains(topic), names.toString());

            DescribeClusterResult cluster = a.describeCluster();
            Collection<Node> nodes = cluster.nodes().get(30, TimeUnit.SECONDS);
            assertEquals(1, nodes.size());
            Node node = nodes.iterator().next();
            assertEquals(broker.bootstrap, node.host() + ":" + node.port());
            assertFalse(cluster.clusterId().get(30, TimeUnit.SECONDS).isEmpty());

            a.deleteTopics(List.of(topic)).all().get(30, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (a.listTopics().names().get(30, TimeUnit.SECONDS).contains(topic)) {
                assertTrue(System.nanoTime() < deadline, "deleted topic still listed");
                Thread.sleep(100);
            }
        }
        broker.assertAlive();
    }

    @Test
    void producerWithAcksOneAndExplicitPartitions() throws Exception {
        String topic = Broker.uniqueTopic("acks1");
        try (Admin a = admin()) {
            Broker.createTopic(a, topic, 2, Map.of());
        }
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.ACKS_CONFIG, "1");
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        List<RecordMetadata> mds = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 100; i++) {
                mds.add(producer.send(new ProducerRecord<>(topic, i % 2, null, ("k" + i).getBytes(StandardCharsets.UTF_8),
                        ("v" + i).getBytes(StandardCharsets.UTF_8))).get(30, TimeUnit.SECONDS));
            }
        }
        for (int i = 0; i < 100; i++) {
            assertEquals(i % 2, mds.get(i).partition());
            assertEquals(i / 2, mds.get(i).offset());
        }
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(topic, 1);
            consumer.assign(List.of(tp));
            consumer.seek(tp, 10);
            List<String> values = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (values.size() < 40 && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    assertEquals(10 + values.size(), r.offset());
                    values.add(new String(r.value(), StandardCharsets.UTF_8));
                }
            }
            List<String> want = new ArrayList<>();
            for (int j = 0; j < 40; j++) {
                want.add("v" + (2 * (10 + j) + 1)); // partition 1 holds the odd records; offset o is record 2o+1
            }
            assertEquals(want, values);
        }
    }

    /**
     * Admin.describeFeatures (what {@code kafka-features describe} prints): metadata.version
     * supported 3.3-IV3 (level 7) to 4.4-IV2 (level 33) and finalized at 4.4-IV2; group.version 1
     * (KIP-848 consumer groups) and transaction.version 2 (KIP-890) supported and finalized; the
     * features Frieda does not implement (KIP-853 dynamic quorums) supported at level 0 only and
     * not finalized, so clients see them off.
     */
    @Test
    void featuresDescribeMetadataVersion44() throws Exception {
        try (Admin a = admin()) {
            org.apache.kafka.clients.admin.FeatureMetadata f =
                    a.describeFeatures().featureMetadata().get(30, TimeUnit.SECONDS);
            assertEquals((short) 7, f.supportedFeatures().get("metadata.version").minVersion());
            assertEquals((short) 33, f.supportedFeatures().get("metadata.version").maxVersion());
            assertEquals((short) 33, f.finalizedFeatures().get("metadata.version").maxVersionLevel());
            assertEquals((short) 2, f.supportedFeatures().get("transaction.version").maxVersion());
            assertEquals((short) 2, f.finalizedFeatures().get("transaction.version").maxVersionLevel());
            assertEquals((short) 1, f.supportedFeatures().get("group.version").maxVersion());
            assertEquals((short) 1, f.finalizedFeatures().get("group.version").maxVersionLevel());
            // kraft.version 1 (KIP-853), as a new Kafka 4.4.0 quorum finalizes it.
            assertEquals((short) 1, f.supportedFeatures().get("kraft.version").maxVersion());
            assertEquals((short) 1, f.finalizedFeatures().get("kraft.version").maxVersionLevel());
            assertTrue(f.finalizedFeaturesEpoch().isPresent());
        }
    }

    /**
     * ListConfigResources (KIP-1142, Kafka 4.1+), as {@code kafka-configs --describe} without an
     * entity name uses it: all resources name a new topic and the broker; filtered by type, only
     * topics come back.
     */
    @Test
    void listConfigResourcesNamesTopicsAndBrokers() throws Exception {
        try (Admin a = admin()) {
            String topic = "lcr-" + java.util.UUID.randomUUID();
            Broker.createTopic(a, topic, 1, Map.of());
            int node = a.describeCluster().nodes().get(30, TimeUnit.SECONDS).iterator().next().id();
            Collection<ConfigResource> all = a.listConfigResources().all().get(30, TimeUnit.SECONDS);
            assertTrue(all.contains(new ConfigResource(ConfigResource.Type.TOPIC, topic)), all.toString());
            assertTrue(all.contains(new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(node))), all.toString());
            Collection<ConfigResource> topics = a.listConfigResources(Set.of(ConfigResource.Type.TOPIC),
                    new org.apache.kafka.clients.admin.ListConfigResourcesOptions()).all().get(30, TimeUnit.SECONDS);
            assertTrue(topics.contains(new ConfigResource(ConfigResource.Type.TOPIC, topic)), topics.toString());
            assertTrue(topics.stream().allMatch(r -> r.type() == ConfigResource.Type.TOPIC), topics.toString());
        }
    }

    /**
     * AlterReplicaLogDirs as {@code kafka-reassign-partitions} with {@code log_dirs} sends it: to
     * the broker's own log directory (as DescribeLogDirs names it) it succeeds; to a directory the
     * broker does not have, LOG_DIR_NOT_FOUND; for a partition it holds no replica of,
     * REPLICA_NOT_AVAILABLE (Kafka's ReplicaManager).
     */
    @Test
    void alterReplicaLogDirsToTheLogDirOrElsewhere() throws Exception {
        try (Admin a = admin()) {
            String topic = "arld-" + java.util.UUID.randomUUID();
            Broker.createTopic(a, topic, 1, Map.of());
            int node = a.describeCluster().nodes().get(30, TimeUnit.SECONDS).iterator().next().id();
            String dir = a.describeLogDirs(List.of(node)).allDescriptions().get(30, TimeUnit.SECONDS)
                    .get(node).keySet().iterator().next();
            org.apache.kafka.common.TopicPartitionReplica replica =
                    new org.apache.kafka.common.TopicPartitionReplica(topic, 0, node);
            a.alterReplicaLogDirs(Map.of(replica, dir)).all().get(30, TimeUnit.SECONDS);
            ExecutionException e = assertThrows(ExecutionException.class, () -> a.alterReplicaLogDirs(
                    Map.of(replica, "/no/such/frieda/log/dir")).all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(org.apache.kafka.common.errors.LogDirNotFoundException.class, e.getCause());
            org.apache.kafka.common.TopicPartitionReplica missing =
                    new org.apache.kafka.common.TopicPartitionReplica(topic, 7, node);
            e = assertThrows(ExecutionException.class, () -> a.alterReplicaLogDirs(Map.of(missing, dir))
                    .all().get(30, TimeUnit.SECONDS));
            assertInstanceOf(org.apache.kafka.common.errors.ReplicaNotAvailableException.class, e.getCause());
        }
    }

    /**
     * The cluster-wide dynamic default, as {@code kafka-configs --alter --entity-type brokers
     * --entity-default --add-config message.max.bytes=2000} sends it (IncrementalAlterConfigs of
     * the broker resource ""): a 5,000-byte record is refused RecordTooLargeException at once,
     * DescribeConfigs of the default resource lists only that value (source
     * DYNAMIC_DEFAULT_BROKER_CONFIG) and the broker's own shows it in force; deleting it lets the
     * record in again.
     */
    @Test
    void dynamicDefaultBrokerConfigAppliesWithoutRestart() throws Exception {
        try (Admin a = admin()) {
            String topic = "dyn-" + java.util.UUID.randomUUID();
            Broker.createTopic(a, topic, 1, Map.of());
            ConfigResource dflt = new ConfigResource(ConfigResource.Type.BROKER, "");
            org.apache.kafka.clients.admin.ConfigEntry entry =
                    new org.apache.kafka.clients.admin.ConfigEntry("message.max.bytes", "2000");
            a.incrementalAlterConfigs(Map.of(dflt, List.of(new org.apache.kafka.clients.admin.AlterConfigOp(
                    entry, org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET)))).all().get(30, TimeUnit.SECONDS);
            Config d = a.describeConfigs(List.of(dflt)).all().get(30, TimeUnit.SECONDS).get(dflt);
            assertEquals("2000", d.get("message.max.bytes").value());
            assertEquals(org.apache.kafka.clients.admin.ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                    d.get("message.max.bytes").source());
            assertEquals(1, d.entries().size(), d.toString());
            int node = a.describeCluster().nodes().get(30, TimeUnit.SECONDS).iterator().next().id();
            ConfigResource mine = new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(node));
            assertEquals("2000", a.describeConfigs(List.of(mine)).all().get(30, TimeUnit.SECONDS)
                    .get(mine).get("message.max.bytes").value());
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
            pp.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 10000);
            pp.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000);
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
                ExecutionException e = assertThrows(ExecutionException.class,
                        () -> p.send(new ProducerRecord<>(topic, 0, null, new byte[5000])).get(30, TimeUnit.SECONDS));
                assertInstanceOf(org.apache.kafka.common.errors.RecordTooLargeException.class, e.getCause());
                a.incrementalAlterConfigs(Map.of(dflt, List.of(new org.apache.kafka.clients.admin.AlterConfigOp(
                        entry, org.apache.kafka.clients.admin.AlterConfigOp.OpType.DELETE)))).all().get(30, TimeUnit.SECONDS);
                assertNotNull(p.send(new ProducerRecord<>(topic, 0, null, new byte[5000])).get(30, TimeUnit.SECONDS));
            }
        }
    }
}
