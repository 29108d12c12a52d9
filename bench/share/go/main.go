// Share group (KIP-932) benchmark with franz-go instead of the Java clients: the same two phases
// as bench/share/ShareBench.java, for a load generator without a JIT compiler or stop-the-world
// young collections (and, during the latency phase, without a collector at all, below):
//
//  1. latency: a producer (acks=all, no linger) offers RATE records/s open loop for WARMUP+SECS
//     seconds, each record carrying its intended send time; C share consumers (one client each,
//     explicit acknowledgement: every polled record marked AckAccept, then FlushAcks, which
//     returns once the broker answered the acknowledgement, as KafkaShareConsumer.commitSync);
//     the produce-to-acknowledge latency of a record is from its intended send to the return of
//     that FlushAcks (µs), counted for records sent after WARMUP seconds. The load generator's
//     own share of that tail is kept small and reported (send_late_us: how late the sender
//     handed each record to the client, its floor):
//     - the sender sleeps in clock_nanosleep on its own OS thread: Go's timers wait in the
//     netpoller, which rounds any wait under 1 ms up to 1 ms (runtime/netpoll_epoll.go, go1.26),
//     so time.Sleep sent each record 0-1 ms late (p50 427 µs, p99.9 1.9 ms, 2026-12-01);
//     - the collector is off from the first record to the end of the phase (a 4 GiB limit stops it
//     growing without bound): collections every ~0.1 s took a core of this 2-core machine for
//     ~1 ms each and put the 1% slowest records over 2 ms (1 consumer on Frieda: p99 2.2 ms
//     with it, 0.8 ms without);
//  2. throughput: the consumers leave, BACKLOG records are produced, C new consumers drain them:
//     delivered records/s = BACKLOG / (time from their start to the last acknowledgement stored).
//
// Usage: sharebench <bootstrap> <consumers> <rate> <secs> <warmup secs> <backlog> <record bytes>
// Prints one JSON line (the fields of ShareBench.java's, send_late_us included).
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var (
	running      atomic.Bool
	acked        atomic.Int64
	lastAckNanos atomic.Int64
	measureFrom  atomic.Int64
	measureTo    atomic.Int64
	latencyMu    sync.Mutex
	latency      = hdrhistogram.New(1, 60_000_000, 3)
	epoch        = time.Now()
)

// now is nanoseconds on the monotonic clock since the start.
func now() int64 { return int64(time.Since(epoch)) }

func must(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

func stamp(nanos int64, size int) []byte {
	b := make([]byte, max(size, 8))
	binary.BigEndian.PutUint64(b, uint64(nanos))
	return b
}

func main() {
	if len(os.Args) != 8 {
		fmt.Fprintln(os.Stderr, "usage: sharebench <bootstrap> <consumers> <rate> <secs> <warmup secs> <backlog> <record bytes>")
		os.Exit(2)
	}
	bootstrap := os.Args[1]
	consumers, _ := strconv.Atoi(os.Args[2])
	rate, _ := strconv.ParseFloat(os.Args[3], 64)
	secs, _ := strconv.ParseFloat(os.Args[4], 64)
	warmup, _ := strconv.ParseFloat(os.Args[5], 64)
	backlog, _ := strconv.Atoi(os.Args[6])
	size, _ := strconv.Atoi(os.Args[7])
	topic := fmt.Sprintf("share-bench-go-%08x", rand.Uint32())
	group := "share-bench-" + topic
	ctx := context.Background()
	measureFrom.Store(1 << 62)
	measureTo.Store(1 << 62)

	producer, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0), kgo.DefaultProduceTopic(topic))
	must(err, "producer")
	defer producer.Close()
	_, err = kadm.NewClient(producer).CreateTopic(ctx, 1, 1, nil, topic)
	must(err, "create topic")

	running.Store(true)
	var wg sync.WaitGroup
	start := func(n int) {
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(id int) {
				defer wg.Done()
				consume(bootstrap, topic, group, id)
			}(i)
		}
	}
	start(consumers)
	// A new share group starts at the log end: sentinels until some consumer acknowledged one.
	deadline := time.Now().Add(60 * time.Second)
	for acked.Load() == 0 {
		if time.Now().After(deadline) {
			must(fmt.Errorf("no consumer got a record within 60 s"), "start")
		}
		must(producer.ProduceSync(ctx, &kgo.Record{Value: stamp(now(), size)}).FirstErr(), "sentinel")
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // every member joins and gets the partition

	// 1. latency, open loop: sleep until each record is due (never spin: a spinning sender takes
	// a core of this 2-core machine from the broker and the consumers), in clock_nanosleep on
	// this goroutine's own thread (see the header: time.Sleep rounds up to 1 ms).
	runtime.LockOSThread()
	runtime.GC()
	gcPercent := debug.SetGCPercent(-1)
	memLimit := debug.SetMemoryLimit(4 << 30)
	sendLate := hdrhistogram.New(1, 60_000_000, 3)
	t0 := now()
	measureFrom.Store(t0 + int64(warmup*1e9))
	measureTo.Store(t0 + int64((warmup+secs)*1e9))
	n := int64(rate * (warmup + secs))
	var produceErr atomic.Value
	for i := int64(0); i < n; i++ {
		due := t0 + int64(float64(i)*1e9/rate)
		if d := due - now(); d > 0 {
			ts := syscall.NsecToTimespec(d)
			_ = syscall.Nanosleep(&ts, nil) // EINTR: at worst early, never late
		}
		if late := now() - due; due >= measureFrom.Load() {
			_ = sendLate.RecordValue(max(0, late/1000))
		}
		producer.Produce(ctx, &kgo.Record{Value: stamp(due, size)}, func(_ *kgo.Record, err error) {
			if err != nil {
				produceErr.Store(err)
			}
		})
	}
	must(producer.Flush(ctx), "flush")
	if err, _ := produceErr.Load().(error); err != nil {
		must(err, "produce")
	}
	time.Sleep(3 * time.Second)
	debug.SetGCPercent(gcPercent)
	debug.SetMemoryLimit(memLimit)
	runtime.UnlockOSThread()

	// 2. throughput: the consumers leave, a backlog is produced, new consumers drain it (the
	// group resumes at its start offset, past every record of phase 1).
	running.Store(false)
	wg.Wait()
	for i := 0; i < backlog; i++ {
		producer.Produce(ctx, &kgo.Record{Value: stamp(0, size)}, func(_ *kgo.Record, err error) {
			if err != nil {
				produceErr.Store(err)
			}
		})
	}
	must(producer.Flush(ctx), "flush backlog")
	if err, _ := produceErr.Load().(error); err != nil {
		must(err, "produce backlog")
	}
	acked.Store(0)
	running.Store(true)
	resumed := now()
	start(consumers)
	deadline = time.Now().Add(300 * time.Second)
	for acked.Load() < int64(backlog) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	drained := acked.Load()
	drainSecs := float64(lastAckNanos.Load()-resumed) / 1e9
	running.Store(false)
	wg.Wait()

	latencyMu.Lock()
	h := latency
	latencyMu.Unlock()
	out := map[string]any{
		"client": "franz-go", "consumers": consumers, "rate": rate, "secs": secs, "record_bytes": size,
		"samples": h.TotalCount(),
		"latency_us": map[string]int64{
			"p50": h.ValueAtQuantile(50), "p90": h.ValueAtQuantile(90), "p99": h.ValueAtQuantile(99),
			"p99.9": h.ValueAtQuantile(99.9), "p99.99": h.ValueAtQuantile(99.99), "max": h.Max(),
		},
		"send_late_us": map[string]int64{
			"p50": sendLate.ValueAtQuantile(50), "p99": sendLate.ValueAtQuantile(99),
			"p99.9": sendLate.ValueAtQuantile(99.9), "max": sendLate.Max(),
		},
		"backlog": backlog, "drained": drained, "drain_secs": drainSecs,
		"delivered_per_sec": float64(drained) / max(drainSecs, 1e-9),
	}
	js, _ := json.Marshal(out)
	fmt.Println(string(js))
}

// consume runs one share consumer until `running` turns false: each poll's records are marked
// accepted and flushed before the next poll; their latencies are recorded after the flush.
func consume(bootstrap, topic, group string, id int) {
	// FetchMaxWait 500 ms: the Java consumer's fetch.max.wait.ms (franz-go waits 5 s by default).
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
		kgo.ClientID(fmt.Sprintf("share-bench-%d", id)), kgo.FetchMaxWait(500*time.Millisecond))
	must(err, "consumer")
	defer cl.Close()
	stamps := make([]int64, 0, 512)
	for running.Load() {
		pollCtx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		fetches := cl.PollFetches(pollCtx)
		cancel()
		stamps = stamps[:0]
		fetches.EachRecord(func(r *kgo.Record) {
			stamps = append(stamps, int64(binary.BigEndian.Uint64(r.Value)))
		})
		if len(stamps) == 0 {
			continue
		}
		cl.MarkAcks(kgo.AckAccept)
		flushCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cl.FlushAcks(flushCtx)
		cancel()
		must(err, "flush acks")
		t := now()
		from, to := measureFrom.Load(), measureTo.Load()
		latencyMu.Lock()
		for _, s := range stamps {
			if s >= from && s <= to {
				_ = latency.RecordValue(max(0, (t-s)/1000))
			}
		}
		latencyMu.Unlock()
		acked.Add(int64(len(stamps)))
		lastAckNanos.Store(t)
	}
}
