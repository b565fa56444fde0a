# Shared by the benchmark scripts (source it; bash only): summary statistics of their runs.

# bench_median: the median of the numbers on standard input, one per line (the mean of the two
# middle ones for an even count), or "n/a" when there are none (every run failed).
bench_median() {
  sort -g | awk '{ v[NR] = $1 } END {
      if (NR == 0) { print "n/a"; exit }
      print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
