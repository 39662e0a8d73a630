#!/usr/bin/env bash
# Two cores against one on the parallel packet engine (issue 21; docs/architecture.md, "The
# parallel engine"): the k=16 permutations on Ethernet, RoCE (PFC, ECN, DCQCN) and InfiniBand,
# each run with --threads 1 and --threads 2 alternating, in PAIRS pairs, on the same binary and
# GOMAXPROCS=2, whole process (building the topology and writing the outputs included). Checks
# that the outputs of both thread counts are the same bytes (summary.json, flows.csv,
# ports.csv) and prints every pair's wall and CPU seconds, the ratio one thread / two threads
# and its median per scenario. Wall time means something only on two otherwise idle cores: the
# load average is printed before every pair.
#
# Usage: scripts/parallel-pairs.sh [PAIRS]        (from the repository root; PAIRS default 4)
# Environment: WORK (work directory, default a new one under /tmp), BIN (a fabricsim binary to
# use instead of building one), TWIN=1 (after each pair, two one-thread runs at once: each
# should take about one thread's CPU alone, which says the two cores do not slow each other,
# so that two threads' extra CPU is the engine's; docs/architecture.md, "Sleeping hand-offs").
# The Go runtime's variables pass through: GOGC=off runs both thread counts without the garbage
# collector, whose marking a second thread puts on the critical path (docs/architecture.md,
# "Work per window"; a k=16 run then peaks at 58-98 MB RSS).
# Needs: go, awk, cmp, /usr/bin/time (GNU time).
set -euo pipefail

PAIRS=${1:-4}
WORK=${WORK:-$(mktemp -d /tmp/parallel-pairs.XXXXXX)}
mkdir -p "$WORK"
BIN=${BIN:-$WORK/fabricsim}
if [ ! -x "$BIN" ]; then
	go build -o "$BIN" ./cmd/fabricsim
fi
# The DCQCN example is k=8; the pair runs it on k=16 (the other two examples are k=16).
sed 's/^\(  *\)k: 8$/\1k: 16/' examples/roce-dcqcn-permutation.yaml >"$WORK/roce-dcqcn-permutation-k16.yaml"
grep -q 'k: 16' "$WORK/roce-dcqcn-permutation-k16.yaml" || { echo "could not set k: 16 in the DCQCN example" >&2; exit 1; }
export GOMAXPROCS=2

for f in examples/permutation-k16.yaml "$WORK/roce-dcqcn-permutation-k16.yaml" examples/ib-permutation-k16.yaml; do
	name=$(basename "$f" .yaml)
	: >"$WORK/$name.ratios"
	for p in $(seq 1 "$PAIRS"); do
		echo "$name pair $p: load $(cut -d' ' -f1-3 /proc/loadavg)"
		for t in 1 2; do
			out="$WORK/$name-t$t"
			rm -rf "$out"
			/usr/bin/time -f "%e %U %S" -o "$WORK/time" "$BIN" run "$f" --threads "$t" --quiet --out "$out" >/dev/null
			read -r wall user sys <"$WORK/time"
			echo "$wall" >"$WORK/wall$t"
			echo "  threads $t: $wall s wall, $(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.2f", u+s}') s CPU"
		done
		if [ "${TWIN:-0}" = 1 ]; then
			for x in a b; do
				/usr/bin/time -f "%e %U %S" -o "$WORK/time-$x" "$BIN" run "$f" --threads 1 --quiet --out "$WORK/$name-$x" >/dev/null &
			done
			wait
			for x in a b; do
				read -r wall user sys <"$WORK/time-$x"
				echo "  twin $x (one thread, both at once): $wall s wall, $(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.2f", u+s}') s CPU"
			done
		fi
		for o in summary.json flows.csv ports.csv; do
			cmp -s "$WORK/$name-t1/$o" "$WORK/$name-t2/$o" || { echo "  $o differs between 1 and 2 threads" >&2; exit 1; }
		done
		awk -v a="$(cat "$WORK/wall1")" -v b="$(cat "$WORK/wall2")" 'BEGIN{printf "  1 / 2 threads: %.2fx\n", a/b}' | tee -a "$WORK/$name.ratios"
	done
	sort -n -k5 "$WORK/$name.ratios" | awk '{r[NR]=$5+0} END{m=(NR%2)?r[(NR+1)/2]:(r[NR/2]+r[NR/2+1])/2; printf "%s: median 1 / 2 threads %.2fx over %d pairs (outputs identical)\n", name, m, NR}' name="$name"
done
echo "work directory: $WORK"
