package dev.frieda.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Share groups (KIP-932) with Kafka 4.4's {@code KafkaShareConsumer}: three consumers of one
 * partition each get records and, when all accept, every record is consumed exactly once; a
 * released record comes back with a higher delivery count; a rejected one never comes back;
 * Admin lists and describes the share group.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class JavaShareGroupsTest {
    private Broker broker;

    @BeforeEach
    void start() throws Exception {
        broker = Broker.start();
    }

    @AfterEach
    void stop() throws Exception {
        broker.close();
    }

    private KafkaShareConsumer<String, String> consumer(String group, String name) {
        Properties p = new Properties();
        p.put("bootstrap.servers", broker.bootstrap);
        p.put("group.id", group);
        p.put("client.id", name);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        return new KafkaShareConsumer<>(p);
    }

    private KafkaProducer<String, String> producer() {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(pp);
    }

    /**
     * A new share group starts at the log end (share.auto.offset.reset=latest): sentinels are
     * produced until one of the consumers got one, so the share-partition exists before the
     * records under test are produced.
     */
    private void warmUp(KafkaProducer<String, String> prod, String topic, List<KafkaShareConsumer<String, String>> cs)
            throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            assertTrue(System.nanoTime() < deadline, "no consumer got a record within 60 s\n" + broker.tail());
            prod.send(new ProducerRecord<>(topic, "sentinel", "sentinel")).get();
            boolean got = false;
            for (KafkaShareConsumer<String, String> c : cs) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                    got = true;
                }
                c.commitSync();
            }
            if (got) {
                return;
            }
        }
    }

    @Test
    void threeConsumersShareOnePartitionAndEveryRecordIsConsumedOnce() throws Exception {
        String topic = Broker.uniqueTopic("share");
        String group = "share-" + topic;
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.bootstrap))) {
            Broker.createTopic(admin, topic, 1, Map.of());
        }
        List<KafkaShareConsumer<String, String>> cs = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            KafkaShareConsumer<String, String> c = consumer(group, "c" + i);
            c.subscribe(List.of(topic));
            cs.add(c);
        }
        try (KafkaProducer<String, String> prod = producer()) {
            warmUp(prod, topic, cs);
            int n = 600;
            for (int i = 0; i < n; i++) {
                prod.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
            }
            prod.flush();

            Map<String, Integer> seen = new ConcurrentHashMap<>();
            Map<String, Integer> perConsumer = new HashMap<>();
            String released = null;
            String rejected = null;
            int releasedRedeliveredCount = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (seen.size() < n - 1 && System.nanoTime() < deadline) {
                for (int i = 0; i < cs.size(); i++) {
                    KafkaShareConsumer<String, String> c = cs.get(i);
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        if (r.value().equals("sentinel")) {
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                            continue;
                        }
                        short dc = r.deliveryCount().orElse((short) -1);
                        if (released == null && r.value().equals("v10")) {
                            // Released once: it must come back, delivered a second time.
                            released = r.value();
                            assertEquals(1, dc, "first delivery of " + r.value());
                            c.acknowledge(r, AcknowledgeType.RELEASE);
                            continue;
                        }
                        if (rejected == null && r.value().equals("v20")) {
                            rejected = r.value();
                            c.acknowledge(r, AcknowledgeType.REJECT);
                            continue;
                        }
                        if (r.value().equals("v10")) {
                            releasedRedeliveredCount = dc;
                        }
                        Integer before = seen.put(r.value(), i);
                        assertEquals(null, before, r.value() + " consumed twice (by c" + before + " and c" + i + ")");
                        assertEquals(r.key().substring(1), r.value().substring(1), "key and value belong together");
                        perConsumer.merge("c" + i, 1, Integer::sum);
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                    c.commitSync();
                }
            }
            assertEquals(n - 1, seen.size(), "every record but the rejected one consumed; per consumer " + perConsumer
                    + "\n" + broker.tail());
            assertTrue(!seen.containsKey("v20"), "the rejected record never comes back");
            assertEquals(2, releasedRedeliveredCount, "the released record came back with delivery count 2");
            assertTrue(perConsumer.size() >= 2, "records were shared between consumers: " + perConsumer);
        }

        try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.bootstrap))) {
            Collection<GroupListing> listed = admin.listGroups(ListGroupsOptions.forShareGroups()).all().get();
            assertTrue(listed.stream().anyMatch(g -> g.groupId().equals(group) && g.type().orElse(null) == GroupType.SHARE),
                    "listGroups shows the share group: " + listed);
            ShareGroupDescription d = admin.describeShareGroups(List.of(group)).describedGroups().get(group).get();
            assertEquals(3, d.members().size(), "three members: " + d);
            d.members().forEach(m -> assertEquals(Set.of(0), m.assignment().topicPartitions().stream()
                    .map(tp -> tp.partition()).collect(java.util.stream.Collectors.toSet()), "each member has partition 0"));
        }
        for (KafkaShareConsumer<String, String> c : cs) {
            c.close();
        }
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", broker.bootstrap))) {
            admin.deleteShareGroups(List.of(group)).all().get();
            Collection<GroupListing> listed = admin.listGroups(ListGroupsOptions.forShareGroups()).all().get();
            assertTrue(listed.stream().noneMatch(g -> g.groupId().equals(group)), "deleted: " + listed);
        }
    }
}
