// go-peer-bench: the Go peer of arbrt-bench for bench/compare.sh's side-by-side table.
//
// The same operations as arbrt-bench's same-core rows, on goroutines: spawn + join, a token handed
// back and forth over unbuffered channels, runtime.Gosched between two goroutines, and an
// uncontended sync.Mutex. GOMAXPROCS is 1 unless -procs says otherwise, so every goroutine shares
// one P, which is the same-core setting of the arbrt rows.
//
// Output: Google Benchmark's JSON layout (the fields compare_table.py reads): one "iteration" entry
// per repetition with real_time (ns per iteration), ops_per_iter and per_op (seconds per
// operation). No cpu_time: testing.Benchmark measures wall time only.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// benchmark is one measured operation: fn runs b.N iterations of opsPerIter operations each.
type benchmark struct {
	name       string
	opsPerIter float64
	fn         func(b *testing.B)
}

// entry mirrors the part of a Google Benchmark JSON entry that compare_table.py reads.
type entry struct {
	Name            string  `json:"name"`
	RunName         string  `json:"run_name"`
	RunType         string  `json:"run_type"`
	RepetitionIndex int     `json:"repetition_index"`
	Iterations      int     `json:"iterations"`
	RealTime        float64 `json:"real_time"`
	TimeUnit        string  `json:"time_unit"`
	OpsPerIter      float64 `json:"ops_per_iter"`
	PerOp           float64 `json:"per_op"`
}

// spawnJoin: one iteration starts a goroutine and waits for it with a WaitGroup.
func spawnJoin(b *testing.B) {
	var wg sync.WaitGroup
	for i := 0; i < b.N; i++ {
		wg.Add(1)
		go wg.Done()
		wg.Wait()
	}
}

// channelPingPong: one iteration is a round trip over two unbuffered channels (two one-way
// handoffs), Go's idiom for what the others do with a mutex and condition variables.
func channelPingPong(b *testing.B) {
	ping, pong := make(chan struct{}), make(chan struct{})
	go func() {
		for range ping {
			pong <- struct{}{}
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ping <- struct{}{}
		<-pong
	}
	b.StopTimer()
	close(ping)
}

// condPingPong: the same round trip with sync.Mutex and two sync.Cond, the exact analogue of
// ping_pong.h.
func condPingPong(b *testing.B) {
	var mu sync.Mutex
	toPartner, toDriver := sync.NewCond(&mu), sync.NewCond(&mu)
	turn, stop := 0, false
	done := make(chan struct{})
	go func() {
		mu.Lock()
		for {
			for turn&1 == 0 && !stop {
				toPartner.Wait()
			}
			if stop {
				break
			}
			turn++
			toDriver.Signal()
		}
		mu.Unlock()
		close(done)
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mu.Lock()
		turn++
		toPartner.Signal()
		for turn&1 == 1 {
			toDriver.Wait()
		}
		mu.Unlock()
	}
	b.StopTimer()
	mu.Lock()
	stop = true
	toPartner.Signal()
	mu.Unlock()
	<-done
}

// yield: one iteration is two runtime.Gosched calls, the driver's and a partner's that yields back.
func yield(b *testing.B) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
				runtime.Gosched()
			}
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.Gosched()
	}
	b.StopTimer()
	close(quit)
	<-done
}

// mutexUncontended: one iteration locks and unlocks a sync.Mutex nobody else touches.
func mutexUncontended(b *testing.B) {
	var mu sync.Mutex
	for i := 0; i < b.N; i++ {
		mu.Lock()
		mu.Unlock()
	}
}

func main() {
	testing.Init()
	reps := flag.Int("reps", 5, "repetitions of every benchmark (compare.sh takes the median)")
	benchtime := flag.Duration("benchtime", 200*time.Millisecond, "minimum time of one repetition")
	procs := flag.Int("procs", 1, "GOMAXPROCS (1: every goroutine on one P, like same-core rows)")
	flag.Parse()
	runtime.GOMAXPROCS(*procs)
	if err := flag.Set("test.benchtime", benchtime.String()); err != nil {
		fmt.Fprintln(os.Stderr, "go-peer-bench:", err)
		os.Exit(2)
	}
	benchmarks := []benchmark{
		{"BM_Go_SpawnJoin", 1, spawnJoin},
		{"BM_Go_ChannelPingPong", 2, channelPingPong},
		{"BM_Go_CondPingPong", 2, condPingPong},
		{"BM_Go_Yield", 2, yield},
		{"BM_Go_MutexUncontended", 1, mutexUncontended},
	}
	var out struct {
		Context    map[string]string `json:"context"`
		Benchmarks []entry           `json:"benchmarks"`
	}
	out.Context = map[string]string{
		"go_version": runtime.Version(),
		"gomaxprocs": fmt.Sprint(runtime.GOMAXPROCS(0)),
		"num_cpu":    fmt.Sprint(runtime.NumCPU()),
	}
	for _, bm := range benchmarks {
		for rep := 0; rep < *reps; rep++ {
			r := testing.Benchmark(bm.fn)
			nsPerIter := float64(r.T.Nanoseconds()) / float64(r.N)
			out.Benchmarks = append(out.Benchmarks, entry{
				Name: bm.name, RunName: bm.name, RunType: "iteration", RepetitionIndex: rep,
				Iterations: r.N, RealTime: nsPerIter, TimeUnit: "ns",
				OpsPerIter: bm.opsPerIter, PerOp: nsPerIter / bm.opsPerIter * 1e-9,
			})
			fmt.Fprintf(os.Stderr, "%-26s rep %d: %8.1f ns/op\n", bm.name, rep, nsPerIter/bm.opsPerIter)
		}
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&out); err != nil {
		fmt.Fprintln(os.Stderr, "go-peer-bench:", err)
		os.Exit(1)
	}
}
