#!/usr/bin/env bash
# Builds the protocol-parser fuzzer with clang (libFuzzer + ASan + UBSan) and runs it.
# Usage: arbiter/fuzz/run.sh [SECONDS=60] [BUILD_DIR=/tmp/arbiter-fuzz]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
seconds=${1:-60}
out=${2:-/tmp/arbiter-fuzz}
cxx=${CXX_FUZZ:-$(command -v clang++ || command -v clang++-14 || true)}
if [[ -z "$cxx" ]]; then
  echo "fuzz: clang++ not found (libFuzzer needs clang)" >&2
  exit 1
fi
mkdir -p "$out/corpus"
"$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$here/../protocol/include" "$here/parser_fuzz.cc" "$here/../protocol/src/codec.cc" \
  -o "$out/arbiter-parser-fuzz"
# Seed: one valid frame of each client message type (written by the fuzzer binary's own encoder
# would need a second program; these bytes are the v1 encodings, see PROTOCOL.md).
printf '\x14\x00\x00\x00\x01\x00\x00\x00ARBC\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >"$out/corpus/hello"
printf '\x00\x00\x00\x00\x04\x00\x00\x00' >"$out/corpus/block"
printf '\x10\x00\x00\x00\x05\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00' >"$out/corpus/release"
exec "$out/arbiter-parser-fuzz" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 "$out/corpus"
