// gothreads: goroutines calling C (cgo) spread over the Go runtime's threads, each result checked
// against the same function computed in Go. Run natively and under arbrun by
// compat-tests/real-programs/run.sh (go-cgo, go-static): arbrun must recognise it as a Go program
// and run it natively, with output and exit status identical to a native run.
//
// Usage: gothreads [EXIT_STATUS]  (prints "ok gothreads <checksum>", then exits with EXIT_STATUS)
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
)

// mixGo is the reference for mix (cgo.go in C, nocgo.go in Go): splitmix64's finaliser.
func mixGo(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func main() {
	status := 0
	if len(os.Args) > 1 {
		var err error
		if status, err = strconv.Atoi(os.Args[1]); err != nil {
			fmt.Println("FAIL gothreads: bad exit status", os.Args[1])
			os.Exit(2)
		}
	}
	const goroutines, rounds = 8, 20000
	sums := make([]uint64, goroutines)
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := 0
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			if g%2 == 0 {
				runtime.LockOSThread() // half of them keep a thread of their own
				defer runtime.UnlockOSThread()
			}
			var s uint64
			for i := 0; i < rounds; i++ {
				x := uint64(g)<<32 | uint64(i)
				v := mix(x)
				if v != mixGo(x) {
					mu.Lock()
					bad++
					mu.Unlock()
				}
				s += v
				if i%1000 == 0 {
					runtime.Gosched()
				}
			}
			sums[g] = s
		}(g)
	}
	wg.Wait()
	if bad != 0 {
		fmt.Printf("FAIL gothreads: %d results from C differ from Go's\n", bad)
		os.Exit(1)
	}
	var total uint64
	for _, s := range sums {
		total ^= s
	}
	fmt.Printf("ok gothreads %016x via %s\n", total, how)
	os.Exit(status)
}
