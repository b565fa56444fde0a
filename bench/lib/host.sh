# Shared by the benchmark scripts (source it; bash only): what about the host decides their figures.

# bench_host_line ARBRUN: one line on the thread-pointer write, from `arbrun doctor`'s fsgsbase
# check (its measured cost here). Without FSGSBASE each user-thread switch is a system call that
# costs ~150 ns on bare metal and microseconds in some VMs, and a server idle between requests
# makes two per request, so ratios against native from different hosts only compare with it.
bench_host_line() {
  local line
  line=$("$1" doctor 2>/dev/null | awk '$2 == "fsgsbase" { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }')
  echo "host: fsgsbase ${line:-not checked (arbrun doctor gave no fsgsbase line)}"
}
