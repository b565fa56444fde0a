//go:build !cgo

package main

const how = "go"

// mix without cgo (CGO_ENABLED=0: a statically linked program).
func mix(x uint64) uint64 { return mixGo(x) }
