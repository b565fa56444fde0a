"""Statistics the reports use: medians, nearest-rank quantiles, ratios, per-second latency."""
import math


def median(values):
    """The median of a non-empty sequence (mean of the middle two for an even count)."""
    v = sorted(values)
    if not v:
        raise ValueError("median of no values")
    n = len(v)
    mid = n // 2
    return v[mid] if n % 2 else (v[mid - 1] + v[mid]) / 2


def quantile(sorted_values, q):
    """Nearest-rank quantile of an already sorted sequence: the smallest value with at least
    q of the values at or below it (q in [0, 1]). None for no values."""
    if not 0 <= q <= 1:
        raise ValueError(f"quantile {q} not in [0, 1]")
    n = len(sorted_values)
    if n == 0:
        return None
    rank = max(1, math.ceil(q * n))
    return sorted_values[min(rank, n) - 1]


def ratio(numerator, denominator):
    """numerator / denominator, None when either is missing or the denominator is 0."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


def geomean(values):
    """Geometric mean of positive values (None when there are none)."""
    v = [x for x in values if x is not None and x > 0]
    if not v:
        return None
    return math.exp(sum(math.log(x) for x in v) / len(v))


def parse_latency_log(lines):
    """Parses arbloadgen's log ("SCHED_US LATENCY_US" per line) into (sched_s, latency_us)
    pairs; raises ValueError naming the first malformed line."""
    out = []
    for n, line in enumerate(lines, start=1):
        line = line.strip()
        if not line:
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError
            sched_us, lat_us = float(parts[0]), float(parts[1])
            if sched_us < 0 or lat_us < 0 or math.isnan(sched_us) or math.isnan(lat_us):
                raise ValueError
        except ValueError:
            raise ValueError(f"latency log line {n}: malformed '{line}'") from None
        out.append((sched_us / 1e6, lat_us))
    return out


QUANTILES = (0.5, 0.99, 0.999)


def summarize_latency(latencies_us):
    """{'count', 'p50', 'p99', 'p999'} of a list of latencies (µs)."""
    v = sorted(latencies_us)
    return {
        "count": len(v),
        "p50": quantile(v, 0.5),
        "p99": quantile(v, 0.99),
        "p999": quantile(v, 0.999),
    }


def per_second(samples, duration_s=None, skip_s=0.0):
    """Per-second latency quantiles of (sched_s, latency_us) samples, bucketed by scheduled
    send time: a list of dicts {'second', 'count', 'p50', 'p99', 'p999'} for every second from
    skip_s up to duration_s (or the last sample), empty seconds with count 0 and None
    quantiles."""
    buckets = {}
    last = 0
    for t, lat in samples:
        if t < skip_s:
            continue
        s = int(t)
        buckets.setdefault(s, []).append(lat)
        last = max(last, s)
    end = int(math.ceil(duration_s)) if duration_s is not None else last + 1
    rows = []
    for s in range(int(skip_s), end):
        row = summarize_latency(buckets.get(s, []))
        row["second"] = s
        rows.append(row)
    return rows


def overall(samples, skip_s=0.0):
    """Quantiles over every sample scheduled at or after skip_s."""
    return summarize_latency([lat for t, lat in samples if t >= skip_s])


def step_average(points, start, end):
    """Time-weighted average of a step function given as sorted (t, value) points (each value
    holds until the next point) over [start, end]; 0 before the first point."""
    if end <= start:
        return 0.0
    total = 0.0
    value = 0.0
    t_prev = start
    for t, v in points:
        if t <= start:
            value = v
            continue
        if t >= end:
            break
        total += value * (t - t_prev)
        t_prev, value = t, v
    total += value * (end - t_prev)
    return total / (end - start)
