#!/usr/bin/env bash
# The load balance of the parallel packet engine on the k=16 permutations (issue 21;
# docs/architecture.md, "Work per window"), exact and independent of the machine: each scenario
# runs once with --threads N (default 2) and FABRICSIM_WINDOWS set, which writes every window's
# events per partition, and this prints the windows, the events handed between partitions, the
# critical path (the sum over the windows of the busiest partition's events) and the bound it
# gives (events / critical path: the speedup N threads could reach if an event cost the same
# everywhere and nothing else did), against the static bound (events / the busiest partition's
# events over the whole run). The same scenarios as scripts/parallel-pairs.sh. It also prints the
# same from the wall time of each partition's jobs (the trace's busy_ns columns): on two idle
# cores, the time bound against the event bound shows how much of the loss is windows whose
# events cost more in one partition than in the other (a collection, a descheduled thread,
# cache misses), and the jobs' total against one thread's run time the extra cost of an event
# on two cores; under load these are the machine's, not the engine's.
#
# Usage: scripts/parallel-bound.sh [THREADS]        (from the repository root)
# Environment: WORK (work directory, default a new one under /tmp), BIN (a fabricsim binary to
# use instead of building one). Needs: go, awk.
set -euo pipefail

THREADS=${1:-2}
WORK=${WORK:-$(mktemp -d /tmp/parallel-bound.XXXXXX)}
mkdir -p "$WORK"
BIN=${BIN:-$WORK/fabricsim}
if [ ! -x "$BIN" ]; then
	go build -o "$BIN" ./cmd/fabricsim
fi
sed 's/^\(  *\)k: 8$/\1k: 16/' examples/roce-dcqcn-permutation.yaml >"$WORK/roce-dcqcn-permutation-k16.yaml"
grep -q 'k: 16' "$WORK/roce-dcqcn-permutation-k16.yaml" || { echo "could not set k: 16 in the DCQCN example" >&2; exit 1; }

for f in examples/permutation-k16.yaml "$WORK/roce-dcqcn-permutation-k16.yaml" examples/ib-permutation-k16.yaml; do
	name=$(basename "$f" .yaml)
	FABRICSIM_WINDOWS="$WORK/$name.csv" "$BIN" run "$f" --threads "$THREADS" --quiet --out "$WORK/$name" >/dev/null
	awk -F, -v name="$name" '
	NR == 1 { k = (NF - 3) / 3; next }
	{
		most = 0; out = 0
		for (p = 0; p < k; p++) {
			e = $(4 + p); part[p] += e; total += e
			if (e > most) most = e
			out += $(4 + k + p)
			b = $(4 + 2 * k + p); busy += b
			if (b > slow) slow = b
		}
		tcrit += slow; slow = 0
		crit += most; handed += out; windows++
		if (out == 0) quiet++
	}
	END {
		big = 0
		for (p = 0; p < k; p++) if (part[p] > big) big = part[p]
		printf "%s, %d partitions: %d windows (%d with nothing handed over), %d events (%.0f a window), %d handed over (%.1f %%)\n", name, k, windows, quiet, total, total / windows, handed, 100 * handed / total
		printf "  critical path %d events, %.4f of events / %d: bound %.3f; static bound %.3f\n", crit, crit * k / total, k, total / crit, total / big
		printf "  jobs %.1f ms in all, %.1f ms on the critical path: time bound %.3f (machine-dependent)\n", busy / 1e6, tcrit / 1e6, busy / tcrit
	}' "$WORK/$name.csv"
done
echo "work directory: $WORK"
