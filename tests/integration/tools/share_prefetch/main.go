// A franz-go share consumer workload for tests/integration/test_franz_go.py: C consumers
// (one client each) in one share group drain R records of a one-partition topic, each poll's
// records marked accepted and flushed (FlushAcks) before the next poll, as a user of franz-go
// does. franz-go sends its next ShareFetch while the application still holds the last poll's
// records and piggybacks their acknowledgements on the fetch after that one; FetchMaxWait is
// 30 s, so a broker that keeps such a fetch waiting for a window only those acknowledgements
// would free shows up as polls that take 30 s.
//
// Usage: share_prefetch <bootstrap> <consumers> <records> <deadline secs>
// Prints one JSON line: distinct offsets accepted, offsets accepted more than once, records
// produced, seconds from the first consumer's start to the last acknowledgement, and the longest
// poll (ms) that returned records.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func must(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: share_prefetch <bootstrap> <consumers> <records> <deadline secs>")
		os.Exit(2)
	}
	bootstrap := os.Args[1]
	consumers, _ := strconv.Atoi(os.Args[2])
	records, _ := strconv.Atoi(os.Args[3])
	deadlineSecs, _ := strconv.ParseFloat(os.Args[4], 64)
	ctx := context.Background()
	topic := fmt.Sprintf("share-prefetch-%08x", rand.Uint32())
	group := "g-" + topic

	producer, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.DefaultProduceTopic(topic))
	must(err, "producer")
	defer producer.Close()
	_, err = kadm.NewClient(producer).CreateTopic(ctx, 1, 1, nil, topic)
	must(err, "create topic")
	// The group starts at the earliest offset (a new share group starts at the log end):
	// share.auto.offset.reset on the GROUP resource (32), as franz-go's own share tests set it.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = 32
	res.ResourceName = group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name = "share.auto.offset.reset"
	cfg.Value = kmsg.StringPtr("earliest")
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, producer)
	must(err, "alter group config")
	for _, r := range resp.Resources {
		if r.ErrorCode != 0 {
			must(fmt.Errorf("error code %d", r.ErrorCode), "alter group config")
		}
	}
	for i := 0; i < records; i++ {
		producer.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			must(err, "produce")
		})
	}
	must(producer.Flush(ctx), "flush")

	var (
		mu        sync.Mutex
		accepted  = make(map[int64]int, records)
		dups      int
		lastAck   atomic.Int64
		longestMs atomic.Int64
		wg        sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(time.Duration(deadlineSecs * float64(time.Second)))
	// Ends every consumer's poll once all records are accepted, or at the deadline.
	runCtx, stop := context.WithDeadline(ctx, deadline)
	defer stop()
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) >= records
	}
	for c := 0; c < consumers; c++ {
		wg.Add(1)
		go func(id int) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ShareGroup(group), kgo.ConsumeTopics(topic),
				kgo.ClientID(fmt.Sprintf("share-prefetch-%d", id)), kgo.FetchMaxWait(30*time.Second))
			must(err, "consumer")
			// Not closed: a close waits for the in-flight ShareFetch (up to FetchMaxWait); the
			// process ends after the report and the broker ends the sessions with the connections.
			defer wg.Done()
			for !done() && runCtx.Err() == nil {
				t0 := time.Now()
				fetches := cl.PollFetches(runCtx)
				var offsets []int64
				fetches.EachRecord(func(r *kgo.Record) { offsets = append(offsets, r.Offset) })
				if len(offsets) == 0 {
					continue
				}
				if ms := time.Since(t0).Milliseconds(); ms > longestMs.Load() {
					longestMs.Store(ms)
				}
				cl.MarkAcks(kgo.AckAccept)
				flushCtx, cancel := context.WithDeadline(ctx, deadline.Add(30*time.Second))
				must(cl.FlushAcks(flushCtx), "flush acks")
				cancel()
				mu.Lock()
				for _, o := range offsets {
					accepted[o]++
					if accepted[o] == 2 {
						dups++
					}
				}
				if len(accepted) >= records {
					stop()
				}
				mu.Unlock()
				lastAck.Store(int64(time.Since(start)))
			}
		}(c)
	}
	wg.Wait()
	mu.Lock()
	out := map[string]any{
		"accepted": len(accepted), "accepted_again": dups, "records": records,
		"secs": float64(lastAck.Load()) / 1e9, "longest_poll_ms": longestMs.Load(),
	}
	mu.Unlock()
	js, _ := json.Marshal(out)
	fmt.Println(string(js))
}
