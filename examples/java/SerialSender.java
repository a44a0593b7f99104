// A serial gateway sender between two sites that logs what it does in wanconform's log
// format (docs/LOG.md), so that `wanconform validate` can check it against the model.
//
//     java examples/java/SerialSender.java gateway.log.jsonl [--rounds N] [--fixed]
//     wanconform validate gateway.log.jsonl
//
// Standard library only (Java 17 runs the source file directly). The workload: site 1
// writes keys k0..k3 (five puts a round, values {"n": i}) through sender "ny" (batch
// size 2) to site 2; each round ends with a deliver of the batch in the network, the
// deliver_ack of its ack, and a 1 ms tick.
//
// It has a deliberate bug, as real gateways have: after an acknowledgement it does not
// look at its queue again (SPEC R15 says the flush rule runs after every operation), so
// a full batch waits for the next client write. --fixed removes the bug; its log then
// agrees with the model line by line.

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.StringJoiner;

public class SerialSender {
    static final int BATCH_SIZE = 2;
    static final long BATCH_TIME_INTERVAL_MS = 1000; // SPEC §2 defaults
    static final long ACK_TIMEOUT_MS = 10000;

    record Tag(long version, long timestamp, int dsid) {
        String json() { return "[" + version + "," + timestamp + "," + dsid + "]"; }
    }

    record Event(String id, String key, long n, Tag tag, long enqueuedAt) {}

    final boolean fixed;
    final List<String> log = new ArrayList<>();
    long now = 0;
    long seq = 0;
    final Map<String, Tag> origin = new HashMap<>(); // site 1's entries
    final Map<String, Tag> remote = new HashMap<>(); // site 2's entries
    final Set<String> appliedAtRemote = new HashSet<>();
    final List<Event> queue = new ArrayList<>();
    List<Event> inFlight = null;
    long inFlightId = 0;
    long sentAt = 0;
    long nextBatchId = 1;
    boolean batchInNetwork = false;
    boolean ackInNetwork = false;

    SerialSender(boolean fixed) { this.fixed = fixed; }

    static String str(String s) { return "\"" + s + "\""; } // ids and keys: plain ASCII

    static String value(long n) { return "{\"n\":" + n + "}"; }

    static String ids(List<Event> events) {
        StringJoiner out = new StringJoiner(",", "[", "]");
        for (Event e : events) out.add(str(e.id()));
        return out.toString();
    }

    void line(String op, List<String> observed) {
        log.add("{" + op + ",\"observed\":[" + String.join(",", observed) + "]}");
    }

    void put(String key, long n) {
        List<String> observed = new ArrayList<>();
        Tag current = origin.get(key);
        long timestamp = now;
        if (current != null && now <= current.timestamp()) timestamp = current.timestamp() + 1;
        Tag tag = new Tag(current == null ? 1 : current.version() + 1, timestamp, 1); // R9
        origin.put(key, tag);
        Event event = new Event("1:" + (++seq), key, n, tag, now);
        queue.add(event); // R11
        observed.add("{\"kind\":\"enqueued\",\"site\":1,\"event\":" + str(event.id())
                + ",\"key\":" + str(key) + ",\"op\":" + str(current == null ? "create" : "update")
                + ",\"version\":" + tag.json() + ",\"value\":" + value(n)
                + ",\"senders\":[\"ny\"]"
                + ",\"routes\":{\"ny\":{\"dispatcher\":0,\"bucket\":null}}}"); // R29: one dispatcher
        flush(observed);
        line("\"op\":\"put\",\"site\":1,\"key\":" + str(key) + ",\"value\":" + value(n), observed);
    }

    void deliver() {
        List<String> observed = new ArrayList<>();
        if (!batchInNetwork) {
            observed.add("{\"kind\":\"skipped\",\"op\":\"deliver\"}");
        } else {
            batchInNetwork = false;
            for (Event e : inFlight) { // R16 at site 2
                String status;
                Tag current = remote.get(e.key());
                if (appliedAtRemote.contains(e.id())) {
                    status = "duplicate";
                } else if (current == null || e.tag().timestamp() > current.timestamp()
                        || (e.tag().timestamp() == current.timestamp()
                            && e.tag().version() > current.version())) {
                    status = "ok";
                    remote.put(e.key(), e.tag());
                    appliedAtRemote.add(e.id());
                } else {
                    status = "conflict";
                }
                observed.add("{\"kind\":\"applied\",\"site\":2,\"sender\":\"ny\",\"event\":"
                        + str(e.id()) + ",\"key\":" + str(e.key()) + ",\"status\":"
                        + str(status) + "}");
            }
            ackInNetwork = true;
            flush(observed);
        }
        line("\"op\":\"deliver\",\"sender\":\"ny\"", observed);
    }

    void deliverAck() {
        List<String> observed = new ArrayList<>();
        if (!ackInNetwork) {
            observed.add("{\"kind\":\"skipped\",\"op\":\"deliver_ack\"}");
        } else {
            ackInNetwork = false;
            observed.add("{\"kind\":\"acked\",\"sender\":\"ny\",\"dispatcher\":0,\"batch_id\":" + inFlightId
                    + ",\"removed\":" + ids(inFlight) + "}");
            queue.subList(0, inFlight.size()).clear(); // R18
            inFlight = null;
            if (fixed) flush(observed); // THE BUG: without --fixed, no flush after an ack
        }
        line("\"op\":\"deliver_ack\",\"sender\":\"ny\"", observed);
    }

    void tick(long ms) {
        List<String> observed = new ArrayList<>();
        now += ms;
        if (inFlight != null && now - sentAt >= ACK_TIMEOUT_MS) {
            throw new IllegalStateException("the workload never waits for an ack timeout");
        }
        flush(observed);
        line("\"op\":\"tick\",\"ms\":" + ms, observed);
    }

    void flush(List<String> observed) { // R15 (site 2 is always up here)
        if (inFlight != null || queue.isEmpty()) return;
        boolean full = queue.size() >= BATCH_SIZE;
        boolean due = now - queue.get(0).enqueuedAt() >= BATCH_TIME_INTERVAL_MS;
        if (!full && !due) return;
        inFlight = new ArrayList<>(queue.subList(0, Math.min(BATCH_SIZE, queue.size())));
        inFlightId = nextBatchId++;
        sentAt = now;
        batchInNetwork = true;
        long bytes = 0;
        for (Event e : inFlight) bytes += value(e.n()).getBytes(StandardCharsets.UTF_8).length;
        observed.add("{\"kind\":\"sent\",\"sender\":\"ny\",\"dispatcher\":0,\"batch_id\":" + inFlightId
                + ",\"events\":" + ids(inFlight) + ",\"bytes_full\":" + bytes
                + ",\"bytes_delta\":0,\"events_resent\":0}");
    }

    public static void main(String[] args) throws IOException {
        if (args.length < 1) {
            System.err.println("usage: java SerialSender.java LOG [--rounds N] [--fixed]");
            System.exit(2);
        }
        int rounds = 20;
        boolean fixed = false;
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("--fixed")) fixed = true;
            else if (args[i].equals("--rounds") && i + 1 < args.length) rounds = Integer.parseInt(args[++i]);
            else { System.err.println("unknown argument " + args[i]); System.exit(2); }
        }
        SerialSender sender = new SerialSender(fixed);
        sender.log.add("{\"config\":{\"sites\":[1,2],\"senders\":[{\"id\":\"ny\",\"site\":1,"
                + "\"remote\":2,\"batch_size\":" + BATCH_SIZE + "}]}}");
        long n = 0;
        for (int round = 0; round < rounds; round++) {
            for (int i = 0; i < 5; i++, n++) sender.put("k" + (n % 4), n);
            sender.deliver();
            sender.deliverAck();
            sender.tick(1);
        }
        try (PrintWriter out = new PrintWriter(Files.newBufferedWriter(Path.of(args[0]), StandardCharsets.UTF_8))) {
            for (String l : sender.log) out.print(l + "\n");
        }
    }
}
