//go:build cgo

package main

/*
#include <stdint.h>
static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}
*/
import "C"

const how = "cgo"

// mix calls into C: the goroutine's thread leaves Go's scheduler for the call.
func mix(x uint64) uint64 { return uint64(C.mix(C.uint64_t(x))) }
