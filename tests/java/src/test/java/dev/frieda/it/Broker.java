package dev.frieda.it;

import java.io.FileWriter;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;

/**
 * The broker under test: a Frieda started from {@code $FRIEDA_BIN} (default {@code target/release/frieda})
 * on a free port with a fresh temp data dir, or the external broker named by
 * {@code $FRIEDA_EXTERNAL_BOOTSTRAP}.
 */
final class Broker implements AutoCloseable {
    final String bootstrap;
    /** The Prometheus metrics endpoint's port ({@code metrics.listen}); -1 for an external broker. */
    int metricsPort = -1;
    private volatile Process process;
    private final Path dir;
    private final Path stderr;
    /** The command line that started the broker (null for an external one), reused by {@link #restart()}. */
    private List<String> command;

    private Broker(String bootstrap, Process process, Path dir, Path stderr) {
        this.bootstrap = bootstrap;
        this.process = process;
        this.dir = dir;
        this.stderr = stderr;
    }

    static Broker start() throws Exception {
        String external = System.getenv("FRIEDA_EXTERNAL_BOOTSTRAP");
        if (external != null && !external.isBlank()) {
            return new Broker(external.trim(), null, null, null);
        }
        String bin = System.getenv("FRIEDA_BIN");
        if (bin == null || bin.isBlank()) {
            bin = Paths.get(System.getProperty("frieda.repo.root", "../.."), "target", "release", "frieda").toString();
        }
        if (!Files.isExecutable(Paths.get(bin))) {
            throw new IllegalStateException("broker binary " + bin + " not found: build it (cargo build --release), "
                    + "set FRIEDA_BIN, or set FRIEDA_EXTERNAL_BOOTSTRAP");
        }
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            port = s.getLocalPort();
        }
        int metricsPort;
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"))) {
            metricsPort = s.getLocalPort();
        }
        Path dir = Files.createTempDirectory("frieda-java-it-");
        Path data = Files.createDirectory(dir.resolve("data"));
        Path err = dir.resolve("frieda.stderr");
        String listen = "127.0.0.1:" + port;
        Broker b = new Broker(listen, null, dir, err);
        b.metricsPort = metricsPort;
        b.command = List.of(bin, "serve", "--listen", listen, "--data-dir", data.toString(),
                "--override", "metrics.listen=127.0.0.1:" + metricsPort);
        b.launch(false);
        return b;
    }

    /** Starts {@link #command} (stderr to the file, appended when {@code append}) and waits until it listens. */
    private void launch(boolean append) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(append ? ProcessBuilder.Redirect.appendTo(stderr.toFile()) : ProcessBuilder.Redirect.to(stderr.toFile()));
        pb.environment().putIfAbsent("RUST_LOG", "info");
        Process p = pb.start();
        process = p;
        int port = Integer.parseInt(bootstrap.substring(bootstrap.lastIndexOf(':') + 1));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(startTimeoutSeconds());
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) {
                throw new IllegalStateException("broker exited with " + p.exitValue() + " during start-up\n" + tail());
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException e) {
                Thread.sleep(50);
            }
        }
        p.destroyForcibly();
        throw new IllegalStateException("broker did not listen on " + bootstrap + " within " + startTimeoutSeconds()
                + " s\n" + tail());
    }

    /** $FRIEDA_START_TIMEOUT / $FRIEDA_STOP_TIMEOUT (seconds; 15 and 5 by default), as the Python tests read them. */
    private static long envSeconds(String name, long dflt) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? dflt : (long) Double.parseDouble(v.trim());
    }

    private static long startTimeoutSeconds() {
        return envSeconds("FRIEDA_START_TIMEOUT", 15);
    }

    /** SIGKILL the broker (a crash) and wait until it is gone; not for an external broker. */
    void sigkill() throws Exception {
        if (process == null) {
            throw new IllegalStateException("cannot kill an external broker");
        }
        if (!process.isAlive()) {
            throw new AssertionError("broker died before it was killed (exit " + process.exitValue() + ")\n" + tail());
        }
        process.destroyForcibly(); // SIGKILL
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            throw new AssertionError("broker still alive 10 s after SIGKILL");
        }
    }

    /** Starts the broker again after {@link #sigkill()}: same command line, port and data dir; stderr appended. */
    void restart() throws Exception {
        if (command == null) {
            throw new IllegalStateException("cannot restart an external broker");
        }
        if (process != null && process.isAlive()) {
            throw new IllegalStateException("broker still running");
        }
        try (FileWriter w = new FileWriter(stderr.toFile(), StandardCharsets.UTF_8, true)) {
            w.write("----- restart after SIGKILL -----\n");
        }
        launch(true);
    }

    boolean external() {
        return process == null;
    }

    String tail() {
        if (stderr == null) {
            return "(external broker)";
        }
        try {
            List<String> lines = Files.readAllLines(stderr, StandardCharsets.UTF_8);
            return "----- broker stderr (" + stderr + ") -----\n"
                    + String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
        } catch (IOException e) {
            return "(cannot read " + stderr + ": " + e + ")";
        }
    }

    void assertAlive() {
        if (process != null && !process.isAlive()) {
            throw new AssertionError("broker process is gone (exit " + process.exitValue() + ")\n" + tail());
        }
    }

    static String uniqueTopic(String base) {
        return "java-it-" + base + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /**
     * Creates a topic (the broker's default replication factor: 1 on one broker, the cluster's
     * on a cluster given by FRIEDA_EXTERNAL_BOOTSTRAP; {@code configs}) and waits up to 30 s
     * until every one of its {@code partitions} has a leader.
     */
    static void createTopic(Admin a, String topic, int partitions, Map<String, String> configs) throws Exception {
        a.createTopics(List.of(new NewTopic(topic, java.util.Optional.of(partitions), java.util.Optional.empty()).configs(configs)))
                .all().get(30, TimeUnit.SECONDS);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                TopicDescription d = a.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
                if (d.partitions().size() == partitions && d.partitions().stream().allMatch(p -> p.leader() != null)) {
                    return;
                }
            } catch (ExecutionException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("topic " + topic + " has no leaders after 30 s");
            }
            Thread.sleep(100);
        }
    }

    /** An AdminClient for this broker (30 s API timeout); the caller closes it. */
    Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        return Admin.create(p);
    }

    /**
     * Removes the temp dir (data and stderr) after a clean stop; a broker that failed to stop
     * keeps it, and the assertion's message names its stderr file.
     */
    private void deleteDir() throws IOException {
        if (dir == null) {
            return;
        }
        try (java.util.stream.Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    /** SIGTERM, then exit status 0 within 5 s ($FRIEDA_STOP_TIMEOUT); the temp dir is removed then. */
    @Override
    public void close() throws Exception {
        if (process == null) {
            return;
        }
        try {
            if (!process.isAlive()) {
                throw new AssertionError("broker died during the test (exit " + process.exitValue() + ")\n" + tail());
            }
            long stopTimeout = envSeconds("FRIEDA_STOP_TIMEOUT", 5);
            process.destroy(); // SIGTERM
            if (!process.waitFor(stopTimeout, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
                throw new AssertionError("broker did not exit within " + stopTimeout + " s of SIGTERM\n" + tail());
            }
            if (process.exitValue() != 0) {
                throw new AssertionError("broker exited with " + process.exitValue() + " after SIGTERM (want 0)\n" + tail());
            }
            deleteDir();
        } finally {
            if (process.isAlive()) {
                process.destroyForcibly();
            }
        }
    }
}
