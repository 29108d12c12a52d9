// A KIP-932 share consumer for the cluster tests (run as a single-file program:
// `java -cp <kafka-clients 4.4> ShareWorker.java <bootstrap> <group> <topic> <name>`).
// It accepts every record it gets and prints, flushed line by line:
//   GOT <wall ms> <partition> <offset> <value> <delivery count>   for every delivery
//   ACK <wall ms> <value>        once commitSync reported the acknowledgement stored
// until stdin closes (or the process is killed).

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareWorker {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[1]);
        p.put("client.id", args[3]);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        Thread stdinWatch = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // keep reading
                }
            } catch (Exception ignored) {
                // closed
            }
            System.exit(0);
        });
        stdinWatch.setDaemon(true);
        stdinWatch.start();
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(args[2]));
            while (true) {
                List<ConsumerRecord<String, String>> got = new ArrayList<>();
                try {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        System.out.println("GOT " + System.currentTimeMillis() + " " + r.partition() + " " + r.offset()
                                + " " + r.value() + " " + r.deliveryCount().orElse((short) -1));
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        got.add(r);
                    }
                    Map<TopicIdPartition, Optional<KafkaException>> result = c.commitSync(Duration.ofSeconds(30));
                    long now = System.currentTimeMillis();
                    for (ConsumerRecord<String, String> r : got) {
                        boolean ok = result.entrySet().stream().anyMatch(e -> e.getKey().partition() == r.partition()
                                && e.getKey().topic().equals(r.topic()) && e.getValue().isEmpty());
                        System.out.println((ok ? "ACK " : "NACK ") + now + " " + r.value());
                    }
                } catch (Exception e) {
                    System.out.println("ERR " + System.currentTimeMillis() + " " + e);
                }
                System.out.flush();
            }
        }
    }
}
