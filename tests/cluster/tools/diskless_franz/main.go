// A franz-go (kgo v1.22.3) produce-and-read-back check of one existing topic, for
// tests/cluster/test_diskless_franz.py (a diskless topic), usable on any topic.
//
// It produces -records N records with franz-go's default producer (idempotent, acks=all) to
// explicit partitions i % P (kgo.ManualPartitioner, Record.Partition); record i has key "k-<i>"
// and a value "<i>:" followed by random bytes of varied length (math/rand seeded with -seed, so
// the same run writes the same bytes). It keeps each acknowledged record's (partition, offset),
// then reads the topic from the start as a consumer group member (ConsumeResetOffset AtStart,
// auto-commit off) until it has read N records, commits, and asks the group coordinator
// (OffsetFetch) for the committed offsets. It checks that:
//   - every record is acknowledged, and the acknowledged offsets are dense from 0 per partition;
//   - every record read is at an acknowledged (partition, offset) with that record's key and value
//     bytes, none is read twice, and every acknowledged record is read;
//   - the committed offset of each partition is its record count.
//
// Prints one JSON line: {"produced":N,"acked":N,"read":N,"ok":true,...}; on any mismatch the same
// line with "ok":false and the first errors, the errors on stderr, and exit status 1. Everything
// is bounded by -timeout (default 120 s).
//
// Usage: diskless_franz -brokers HOST:PORT[,...] -topic T -records N -partitions P
//
//	[-group G] [-seed S] [-timeout 120s]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type summary struct {
	Topic        string   `json:"topic"`
	Partitions   int      `json:"partitions"`
	Produced     int      `json:"produced"`
	Acked        int      `json:"acked"`
	Read         int      `json:"read"`
	ValueBytes   int64    `json:"value_bytes"`
	PerPartition []int    `json:"per_partition"`
	Committed    []int64  `json:"committed"`
	ProduceMs    int64    `json:"produce_ms"`
	ConsumeMs    int64    `json:"consume_ms"`
	OK           bool     `json:"ok"`
	Errors       []string `json:"errors,omitempty"`
}

type pos struct {
	p int32
	o int64
}

const maxErrors = 20

func main() {
	brokers := flag.String("brokers", "", "bootstrap brokers, comma separated")
	topic := flag.String("topic", "", "an existing topic with at least -partitions partitions")
	n := flag.Int("records", 20000, "records to produce")
	parts := flag.Int("partitions", 1, "partitions to produce to (record i goes to i % partitions)")
	group := flag.String("group", "", "consumer group (default: diskless-franz-<topic>)")
	seed := flag.Int64("seed", 1, "seed of the value bytes")
	timeout := flag.Duration("timeout", 120*time.Second, "bound on the whole run")
	flag.Parse()
	if *brokers == "" || *topic == "" || *n <= 0 || *parts <= 0 {
		fmt.Fprintln(os.Stderr, "usage: diskless_franz -brokers B -topic T -records N -partitions P [-group G] [-seed S] [-timeout D]")
		os.Exit(2)
	}
	if *group == "" {
		*group = "diskless-franz-" + *topic
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	sum := summary{Topic: *topic, Partitions: *parts, Produced: *n, PerPartition: make([]int, *parts)}
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if len(sum.Errors) < maxErrors {
			sum.Errors = append(sum.Errors, msg)
		}
		fmt.Fprintln(os.Stderr, "MISMATCH: "+msg)
	}
	finish := func() {
		sum.OK = len(sum.Errors) == 0
		line, _ := json.Marshal(sum)
		fmt.Println(string(line))
		if !sum.OK {
			os.Exit(1)
		}
		os.Exit(0)
	}
	seeds := strings.Split(*brokers, ",")

	// ---------------------------------------------------------------- the records
	rng := rand.New(rand.NewSource(*seed))
	keys := make([][]byte, *n)
	values := make([][]byte, *n)
	for i := 0; i < *n; i++ {
		size := rng.Intn(1024) // mostly small, some empty
		switch {
		case i%500 == 7:
			size = 64*1024 + rng.Intn(64*1024) // a few large ones
		case i%50 == 3:
			size = 4096 + rng.Intn(12*1024)
		}
		v := make([]byte, 0, 12+size)
		v = append(v, fmt.Sprintf("%d:", i)...)
		tail := make([]byte, size)
		rng.Read(tail)
		keys[i] = []byte(fmt.Sprintf("k-%d", i))
		values[i] = append(v, tail...)
		sum.ValueBytes += int64(len(values[i]))
		sum.PerPartition[i%*parts]++
	}

	// ---------------------------------------------------------------- produce
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(*topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), // the default; idempotence (also the default) requires it
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		fmt.Fprintf(os.Stderr, "producer client: %v\n", err)
		os.Exit(1)
	}
	start := time.Now()
	var mu sync.Mutex
	acked := make(map[pos]int, *n) // (partition, offset) -> record index
	ackOf := make([]pos, *n)
	var produceErrs []string
	var wg sync.WaitGroup
	for i := 0; i < *n; i++ {
		i := i
		r := &kgo.Record{Key: keys[i], Value: values[i], Partition: int32(i % *parts)}
		wg.Add(1)
		prod.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if len(produceErrs) < maxErrors {
					produceErrs = append(produceErrs, fmt.Sprintf("record %d to partition %d: %v", i, i%*parts, err))
				}
				return
			}
			if r.Partition != int32(i%*parts) {
				fail("record %d acknowledged on partition %d, sent to %d", i, r.Partition, i%*parts)
			}
			at := pos{r.Partition, r.Offset}
			if j, dup := acked[at]; dup {
				fail("records %d and %d both acknowledged at %d@%d", j, i, at.p, at.o)
			}
			acked[at] = i
			ackOf[i] = at
			sum.Acked++
		})
	}
	if err := prod.Flush(ctx); err != nil {
		fail("producer flush: %v", err)
	}
	wg.Wait()
	prod.Close()
	sum.ProduceMs = time.Since(start).Milliseconds()
	for _, e := range produceErrs {
		fail("produce failed: %s", e)
	}
	if sum.Acked != *n {
		fail("%d of %d records acknowledged", sum.Acked, *n)
	}
	// acknowledged offsets dense from 0 per partition
	ackedOffsets := make([][]int64, *parts)
	for at := range acked {
		ackedOffsets[at.p] = append(ackedOffsets[at.p], at.o)
	}
	for p, offs := range ackedOffsets {
		sort.Slice(offs, func(a, b int) bool { return offs[a] < offs[b] })
		for k, o := range offs {
			if o != int64(k) {
				fail("partition %d: acknowledged offsets not dense from 0 (the %dth is %d)", p, k, o)
				break
			}
		}
	}
	if len(sum.Errors) > 0 {
		finish()
	}

	// ---------------------------------------------------------------- consume
	start = time.Now()
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(*group),
		kgo.ConsumeTopics(*topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.FetchMaxWait(1*time.Second),
	)
	if err != nil {
		fmt.Fprintf(os.Stderr, "consumer client: %v\n", err)
		os.Exit(1)
	}
	seen := make(map[pos]bool, *n)
	readPer := make([]int64, *parts)
	for sum.Read < *n && ctx.Err() == nil {
		fetches := cons.PollFetches(ctx)
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				fail("fetch %s-%d: %v", t, p, err)
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			at := pos{r.Partition, r.Offset}
			if seen[at] {
				fail("%s-%d@%d read twice", r.Topic, at.p, at.o)
				return
			}
			seen[at] = true
			sum.Read++
			if int(at.p) < *parts {
				readPer[at.p]++
			}
			i, ok := acked[at]
			if !ok {
				fail("read %s-%d@%d (key %q), which no acknowledgement named", r.Topic, at.p, at.o, r.Key)
				return
			}
			if string(r.Key) != string(keys[i]) || string(r.Value) != string(values[i]) {
				fail("%d@%d: read key %q value %d bytes, acknowledged record %d key %q value %d bytes",
					at.p, at.o, r.Key, len(r.Value), i, keys[i], len(values[i]))
			}
		})
		if len(sum.Errors) >= maxErrors {
			break
		}
	}
	if ctx.Err() != nil {
		fail("timed out after %v: read %d of %d", *timeout, sum.Read, *n)
	}
	for i, at := range ackOf {
		if !seen[at] {
			fail("record %d acknowledged at %d@%d was not read", i, at.p, at.o)
			if len(sum.Errors) >= maxErrors {
				break
			}
		}
	}
	for p := 0; p < *parts; p++ {
		if readPer[p] != int64(sum.PerPartition[p]) {
			fail("partition %d: read %d records, produced %d", p, readPer[p], sum.PerPartition[p])
		}
	}

	// ---------------------------------------------------------------- commit, and ask the coordinator
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		fail("commit: %v", err)
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = *group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = *topic
	for p := 0; p < *parts; p++ {
		rt.Partitions = append(rt.Partitions, int32(p))
	}
	req.Topics = append(req.Topics, rt)
	sum.Committed = make([]int64, *parts) // -1: not answered
	for p := range sum.Committed {
		sum.Committed[p] = -1
	}
	resp, err := req.RequestWith(ctx, cons)
	if err != nil {
		fail("OffsetFetch: %v", err)
	} else {
		record := func(name string, p int32, off int64, code int16) {
			if name != *topic || int(p) >= *parts {
				return
			}
			if code != 0 {
				fail("OffsetFetch %s-%d: %v", name, p, kerr.ErrorForCode(code))
			}
			sum.Committed[p] = off
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			fail("OffsetFetch: %v", err)
		}
		for _, t := range resp.Topics {
			for _, pp := range t.Partitions {
				record(t.Topic, pp.Partition, pp.Offset, pp.ErrorCode)
			}
		}
		for _, g := range resp.Groups {
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				fail("OffsetFetch group %s: %v", g.Group, err)
			}
			for _, t := range g.Topics {
				for _, pp := range t.Partitions {
					record(t.Topic, pp.Partition, pp.Offset, pp.ErrorCode)
				}
			}
		}
		for p := 0; p < *parts; p++ {
			if sum.Committed[p] != int64(sum.PerPartition[p]) {
				fail("partition %d: committed offset %d, want %d", p, sum.Committed[p], sum.PerPartition[p])
			}
		}
	}
	cons.Close() // leaves the group
	sum.ConsumeMs = time.Since(start).Milliseconds()
	finish()
}
