import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;

/**
 * The Yahoo! Streaming Benchmark pipeline (thesis chapter 4's second evaluation) on Kafka
 * Streams, unchanged: ad events (JSON, as YSB's generator writes them) at a fixed aggregate rate
 * from several producers; the processor keeps the "view" events, joins each ad to its campaign
 * through a GlobalKTable over a compacted topic (YSB uses Redis), counts per campaign in 10 s
 * tumbling event-time windows and writes every count update to a results topic.
 *
 * Window latency: the time the window's final count reached the results reader minus the event
 * time of the newest event it counts (the pipeline's delay for the window's last update; YSB's
 * own figure, final update minus the window's end, is reported too as after_window_end_ms: it
 * is negative when a campaign's last view came early in its window). Correctness: the final count of every window that lies wholly
 * inside the production period equals the number of view events the generator sent for it.
 *
 * Usage: java -cp CLASSPATH Ysb.java BOOTSTRAP RATE SECS PRODUCERS [CAMPAIGNS]
 * Prints one JSON line: events, views, windows, mismatched (of which over_counted: duplicates;
 * the others were still short of their count 60 s after production ended, i.e. the pipeline
 * did not keep up), missing, latency percentiles (ms).
 */
public class Ysb {
    static final long WINDOW_MS = 10_000;
    static final long SETTLE_MS = 5_000;
    /**
     * Late events are counted, not dropped: the upstream tasks' records reach a repartition
     * partition out of order by as much as one task lags the other (seconds when a broker is
     * slow), and a short grace would drop them and make counts depend on it.
     */
    static final long GRACE_MS = 60_000;
    static final String[] EVENT_TYPES = {"view", "click", "purchase"};

    public static void main(String[] a) throws Exception {
        String bootstrap = a[0];
        double rate = Double.parseDouble(a[1]);
        double secs = Double.parseDouble(a[2]);
        int producers = Integer.parseInt(a[3]);
        int campaigns = a.length > 4 ? Integer.parseInt(a[4]) : 100;
        // "classic" (the consumer-group rebalance protocol) or "streams" (KIP-1071: the broker
        // assigns the tasks).
        String groupProtocol = a.length > 5 ? a[5] : "classic";
        String run = "ysb-" + UUID.randomUUID().toString().substring(0, 8);
        String events = run + "-events", table = run + "-campaigns", results = run + "-results";

        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(
                    new NewTopic(events, 4, (short) 1),
                    new NewTopic(table, 1, (short) 1).configs(Map.of("cleanup.policy", "compact")),
                    new NewTopic(results, 1, (short) 1))).all().get(60, TimeUnit.SECONDS);
        }
        // 10 ads per campaign, as YSB's setup writes them to Redis.
        List<String> ads = new ArrayList<>();
        Map<String, String> campaignOf = new HashMap<>();
        Random seed = new Random(42);
        try (KafkaProducer<String, String> p = producer(bootstrap)) {
            for (int c = 0; c < campaigns; c++) {
                String campaign = new UUID(seed.nextLong(), seed.nextLong()).toString();
                for (int i = 0; i < 10; i++) {
                    String ad = new UUID(seed.nextLong(), seed.nextLong()).toString();
                    ads.add(ad);
                    campaignOf.put(ad, campaign);
                    p.send(new ProducerRecord<>(table, ad, campaign));
                }
            }
            p.flush();
        }

        Properties sp = new Properties();
        sp.put(StreamsConfig.APPLICATION_ID_CONFIG, run);
        sp.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        sp.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, groupProtocol);
        sp.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0); // every update goes out (as YSB writes each to Redis)
        sp.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        sp.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        sp.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/" + run);
        sp.put(StreamsConfig.producerPrefix("linger.ms"), 0);
        sp.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        StreamsBuilder sb = new StreamsBuilder();
        GlobalKTable<String, String> adCampaigns = sb.globalTable(table, Consumed.with(Serdes.String(), Serdes.String()));
        sb.stream(events, Consumed.with(Serdes.String(), Serdes.String()))
                .filter((k, v) -> "view".equals(field(v, "event_type")))
                .mapValues(v -> field(v, "ad_id"))
                .join(adCampaigns, (k, ad) -> ad, (ad, campaign) -> campaign)
                .groupBy((k, campaign) -> campaign, Grouped.with(Serdes.String(), Serdes.String()))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(WINDOW_MS), Duration.ofMillis(GRACE_MS)))
                .count(Materialized.with(Serdes.String(), Serdes.Long()))
                .toStream()
                .map((w, n) -> KeyValue.pair(w.key() + "@" + w.window().start(), Long.toString(n)))
                .to(results, Produced.with(Serdes.String(), Serdes.String()));
        KafkaStreams streams = new KafkaStreams(sb.build(), sp);
        streams.start();
        long waitUntil = System.currentTimeMillis() + 120_000;
        while (streams.state() != KafkaStreams.State.RUNNING && System.currentTimeMillis() < waitUntil) {
            Thread.sleep(100);
        }
        // The first assignment creates the repartition topic and is followed by another
        // rebalance: production starts once the group has settled.
        Thread.sleep(SETTLE_MS);

        // The results reader: the final count of each window and when it arrived.
        Map<String, long[]> seen = new ConcurrentHashMap<>(); // key -> {count, arrival ms}
        AtomicBoolean stop = new AtomicBoolean();
        Thread reader = new Thread(() -> {
            Properties cp = new Properties();
            cp.put("bootstrap.servers", bootstrap);
            cp.put("key.deserializer", StringDeserializer.class.getName());
            cp.put("value.deserializer", StringDeserializer.class.getName());
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
                TopicPartition tp = new TopicPartition(results, 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                while (!stop.get()) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(50))) {
                        long now = System.currentTimeMillis();
                        long n = Long.parseLong(r.value());
                        seen.merge(r.key(), new long[] {n, now}, (old, nu) -> nu[0] >= old[0] ? nu : old);
                    }
                }
            }
        });
        reader.start();

        // Producers: YSB's JSON events, evenly spaced at the aggregate rate.
        Map<String, AtomicLong> expected = new ConcurrentHashMap<>();
        Map<String, AtomicLong> lastEvent = new ConcurrentHashMap<>(); // window key -> newest view's time
        AtomicLong sent = new AtomicLong(), views = new AtomicLong();
        long start = System.currentTimeMillis() + 500;
        long end = start + (long) (secs * 1000);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < producers; t++) {
            final int id = t;
            Thread th = new Thread(() -> {
                Random rnd = new Random(1000 + id);
                double perNs = rate / producers / 1e9;
                try (KafkaProducer<String, String> p = producer(bootstrap)) {
                    long t0 = System.nanoTime() + (start - System.currentTimeMillis()) * 1_000_000L;
                    for (long j = 0; ; j++) {
                        long due = t0 + (long) (j / perNs);
                        long wait = due - System.nanoTime();
                        if (wait > 0) {
                            TimeUnit.NANOSECONDS.sleep(wait);
                        }
                        long ts = System.currentTimeMillis();
                        if (ts >= end) {
                            break;
                        }
                        String ad = ads.get(rnd.nextInt(ads.size()));
                        String type = EVENT_TYPES[rnd.nextInt(3)];
                        String json = "{\"user_id\":\"" + new UUID(rnd.nextLong(), rnd.nextLong())
                                + "\",\"page_id\":\"" + new UUID(rnd.nextLong(), rnd.nextLong())
                                + "\",\"ad_id\":\"" + ad + "\",\"ad_type\":\"banner\",\"event_type\":\"" + type
                                + "\",\"event_time\":\"" + ts + "\",\"ip_address\":\"1.2.3.4\"}";
                        p.send(new ProducerRecord<>(events, null, ts, null, json));
                        sent.incrementAndGet();
                        if (type.equals("view")) {
                            views.incrementAndGet();
                            String key = campaignOf.get(ad) + "@" + (ts - ts % WINDOW_MS);
                            expected.computeIfAbsent(key, k -> new AtomicLong()).incrementAndGet();
                            lastEvent.computeIfAbsent(key, k -> new AtomicLong()).accumulateAndGet(ts, Math::max);
                        }
                    }
                    p.flush();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            th.start();
            threads.add(th);
        }
        for (Thread th : threads) {
            th.join();
        }
        // Complete windows: wholly inside [start, end).
        List<String> complete = new ArrayList<>();
        for (String k : expected.keySet()) {
            long ws = Long.parseLong(k.substring(k.lastIndexOf('@') + 1));
            if (ws >= start && ws + WINDOW_MS <= end) {
                complete.add(k);
            }
        }
        long deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            boolean all = true;
            for (String k : complete) {
                long[] s = seen.get(k);
                if (s == null || s[0] < expected.get(k).get()) {
                    all = false;
                    break;
                }
            }
            if (all) {
                break;
            }
            Thread.sleep(200);
        }
        Thread.sleep(1000); // late duplicates (at-least-once) would show as a higher count
        stop.set(true);
        reader.join();
        streams.close(Duration.ofSeconds(30));
        streams.cleanUp();

        List<Long> latencies = new ArrayList<>(), afterEnd = new ArrayList<>();
        int mismatched = 0, missing = 0, over = 0;
        for (String k : complete) {
            long[] s = seen.get(k);
            if (s == null) {
                missing++;
                continue;
            }
            if (s[0] != expected.get(k).get()) {
                mismatched++;
                if (s[0] > expected.get(k).get()) {
                    over++; // counted twice: a duplicate
                }
            }
            long ws = Long.parseLong(k.substring(k.lastIndexOf('@') + 1));
            latencies.add(s[1] - lastEvent.get(k).get());
            afterEnd.add(s[1] - (ws + WINDOW_MS));
        }
        Collections.sort(latencies);
        Collections.sort(afterEnd);
        StringBuilder out = new StringBuilder();
        out.append("{\"events\":").append(sent.get())
                .append(",\"views\":").append(views.get())
                .append(",\"rate\":").append(rate)
                .append(",\"secs\":").append(secs)
                .append(",\"producers\":").append(producers)
                .append(",\"campaigns\":").append(campaigns)
                .append(",\"windows\":").append(complete.size())
                .append(",\"mismatched\":").append(mismatched)
                .append(",\"missing\":").append(missing)
                .append(",\"over_counted\":").append(over)
                .append(",\"latency_ms\":{")
                .append("\"p50\":").append(pct(latencies, 50))
                .append(",\"p90\":").append(pct(latencies, 90))
                .append(",\"p99\":").append(pct(latencies, 99))
                .append(",\"max\":").append(pct(latencies, 100))
                .append("},\"after_window_end_ms\":{")
                .append("\"p50\":").append(pct(afterEnd, 50))
                .append(",\"p90\":").append(pct(afterEnd, 90))
                .append(",\"p99\":").append(pct(afterEnd, 99))
                .append(",\"max\":").append(pct(afterEnd, 100))
                .append("},\"window_latencies_ms\":").append(latencies)
                .append("}");
        System.out.println(out);
        System.exit(mismatched == 0 && missing == 0 ? 0 : 1);
    }

    static long pct(List<Long> sorted, double p) {
        if (sorted.isEmpty()) {
            return -1;
        }
        int i = (int) Math.ceil(p / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
    }

    /** A string field of YSB's flat JSON event. */
    static String field(String json, String name) {
        String key = "\"" + name + "\":\"";
        int i = json.indexOf(key);
        if (i < 0) {
            return null;
        }
        int from = i + key.length();
        return json.substring(from, json.indexOf('"', from));
    }

    static KafkaProducer<String, String> producer(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("linger.ms", 5);
        return new KafkaProducer<>(p);
    }
}
