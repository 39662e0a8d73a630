#!/usr/bin/env bash
# htsim baseline (issue 21): fabricsim's packet engine against htsim's RoCE driver on the same
# input, in a paired loop, so anyone can repeat the comparison.
#
# Input: a 1,024-host fat tree (k=16), 100 Gb/s links with 1 us latency, a random permutation
# of 2,000,000-byte flows (fabricsim's generator, seed 1), 4096 B MTU, RoCE with PFC and no
# congestion control (no ECN, no DCQCN). fabricsim writes the permutation as an htsim connection
# matrix (.cm); both simulators then read that same file.
#
# htsim is built from its public repository (github.com/Broadcom/csg-htsim) at a pinned commit
# with its own Makefiles (sim/Makefile: libhtsim.a; sim/datacenter/Makefile: htsim_roce).
# Nothing of htsim is kept in this repository: the sources go to the work directory only.
#
# Usage: scripts/htsim-baseline.sh [PAIRS]        (from the repository root; PAIRS default 3)
# Environment:
#   HTSIM_COMMIT  htsim commit to build (default below)
#   HTSIM_URL     repository to clone (default https://github.com/Broadcom/csg-htsim.git)
#   HTSIM_GIT     an existing clone's git directory to read instead of cloning (offline)
#   WORK          work directory (default: a new directory under /tmp, kept afterwards)
#   NICE          niceness of both simulators (default 10; the same for both)
#   GOMAXPROCS    for fabricsim (default 1: one core, as htsim, which is single-threaded)
#   HTSIM_END_US  htsim's -end, simulated microseconds (default 2000; every flow of this input
#                 finishes well before, which the script checks)
# Needs: git, make, g++, go, awk, /usr/bin/time (GNU time, for -v).
# Prints, per run: wall seconds, user+sys CPU seconds, peak RSS (MiB); then the medians and the
# ratios htsim/fabricsim of each pair. On a shared machine the CPU seconds are the steadier
# figure; the load average is printed before and after every pair.
set -euo pipefail

PAIRS=${1:-3}
HTSIM_COMMIT=${HTSIM_COMMIT:-841d9e7be46bb968eece766aa4b6c044c7799f67}
HTSIM_URL=${HTSIM_URL:-https://github.com/Broadcom/csg-htsim.git}
NICE=${NICE:-10}
export GOMAXPROCS=${GOMAXPROCS:-1}
HTSIM_END_US=${HTSIM_END_US:-2000}
WORK=${WORK:-$(mktemp -d /tmp/htsim-baseline.XXXXXX)}
REPO=$(pwd)
[[ -f $REPO/go.mod && -d $REPO/cmd/fabricsim ]] || { echo "run from the fabricsim repository root" >&2; exit 2; }
[[ $PAIRS =~ ^[1-9][0-9]*$ ]] || { echo "PAIRS: want a whole number >= 1, got '$PAIRS'" >&2; exit 2; }
mkdir -p "$WORK"
echo "work directory: $WORK"

# 1. htsim sources at the pinned commit. Only sim/ is extracted: the repository's experiments/
# hold large connection matrices the build does not need.
if [[ ! -x $WORK/htsim/sim/datacenter/htsim_roce ]]; then
	if [[ -z ${HTSIM_GIT:-} ]]; then
		HTSIM_GIT=$WORK/csg-htsim.git
		[[ -d $HTSIM_GIT ]] || git clone --bare --quiet "$HTSIM_URL" "$HTSIM_GIT"
	fi
	rm -rf "$WORK/htsim" && mkdir -p "$WORK/htsim/sim"
	git --git-dir="$HTSIM_GIT" archive "$HTSIM_COMMIT:sim" | tar -x -C "$WORK/htsim/sim"
	# 2. Build with htsim's own Makefiles and flags (-O3 for the library, -O2 for the driver).
	make -C "$WORK/htsim/sim" -j"$(nproc)" libhtsim.a > "$WORK/htsim-build.log" 2>&1
	make -C "$WORK/htsim/sim/datacenter" htsim_roce >> "$WORK/htsim-build.log" 2>&1
fi
HTSIM=$WORK/htsim/sim/datacenter/htsim_roce
echo "htsim: $HTSIM_COMMIT ($HTSIM)"

# 3. fabricsim from this checkout (go build applies cmd/fabricsim/default.pgo).
go build -o "$WORK/fabricsim" ./cmd/fabricsim
FABRICSIM=$WORK/fabricsim
echo "fabricsim: $(git -C "$REPO" rev-parse HEAD)$(git -C "$REPO" diff --quiet HEAD || echo ' (with local changes)')"

# 4. The connection matrix: fabricsim draws the permutation (a run stopped at 1 ns lists every
# flow in flows.csv: id,src,dst,size_bytes,start_ns,...), written in htsim's .cm grammar
# (`src->dst id I start T size B`, T in picoseconds, ids from 1: htsim reads id 0 as none).
cd "$WORK"
cat > gen.yaml <<'EOF'
name: perm1024-gen
seed: 1
duration: 1ns
topology:
  kind: fat-tree
  k: 16
  link: {rate: 100Gbps, latency: 1us}
fabric: {kind: roce, netdev_mtu: 4200, pfc: true, ecn: false, dcqcn: false}
traffic: {kind: permutation, size: 2MB}
EOF
"$FABRICSIM" run gen.yaml --out gen > /dev/null
awk -F, 'NR == 1 { next } { n++; line[n] = sprintf("%d->%d id %d start %d size %d", $2, $3, $1 + 1, $5 * 1000, $4) }
	END { print "Nodes 1024"; print "Connections " n; for (i = 1; i <= n; i++) print line[i] }' gen/flows.csv > perm1024.cm
# The run's scenario: the same fabric, the flows from the .cm.
sed -e 's/^name: .*/name: perm1024-htsim-cm/' -e '/^duration:/d' \
	-e 's/^traffic: .*/traffic: {kind: htsim, file: perm1024.cm}/' gen.yaml > run.yaml
echo "input: $WORK/perm1024.cm ($(($(wc -l < perm1024.cm) - 2)) connections)"

# htsim's RoCE driver: -nodes 1024 builds the 3-tier fat tree with K=16; 100 Gb/s; -mtu 4096;
# ECMP at the switches (-strat ecmp_host; -paths is required by the driver, unused by it);
# its default queue type is LOSSLESS_INPUT (PFC at switch inputs); RoCE sources send at line
# rate (no congestion control). Hop latency 1 us is its default.
run_htsim() {
	nice -n "$NICE" /usr/bin/time -v -o "$1.time" "$HTSIM" -nodes 1024 -tm perm1024.cm -strat ecmp_host \
		-paths 1 -linkspeed 100000 -mtu 4096 -end "$HTSIM_END_US" -o "$1.htsimlog" > "$1.out" 2>&1
}
run_fabricsim() {
	nice -n "$NICE" /usr/bin/time -v -o "$1.time" "$FABRICSIM" run run.yaml --out "$1.dir" > "$1.out" 2>&1
}
# wall seconds, CPU seconds, peak RSS MiB from GNU time -v
measure() {
	awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
		/User time/ { c += $2 } /System time/ { c += $2 } /Maximum resident/ { r = $2 / 1024 }
		END { printf "%.2f %.2f %.1f\n", w, c, r }' "$1.time"
}

printf '%-5s %-10s %8s %8s %9s\n' pair sim wall_s cpu_s rss_MiB
: > results.txt
for ((i = 1; i <= PAIRS; i++)); do
	echo "load average before pair $i: $(cut -d' ' -f1-3 /proc/loadavg)"
	if ((i % 2)); then order="fabricsim htsim"; else order="htsim fabricsim"; fi
	for sim in $order; do
		"run_$sim" "$sim.$i"
		m=$(measure "$sim.$i")
		echo "$i $sim $m" >> results.txt
		printf '%-5s %-10s %8s %8s %9s\n' "$i" "$sim" $m
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Both must have simulated the whole input: htsim prints one `finished at` line per flow.
fin=$(grep -c ' finished at ' htsim.1.out || true)
last=$(awk '/ finished at / { t = $(NF - 3); if (t > m) m = t } END { print m }' htsim.1.out)
echo "htsim: $fin of 1024 flows finished, the last at $last us"
echo "fabricsim: $(grep -o '"flows": *[0-9]*' fabricsim.1.dir/summary.json), sim_time_ns $(grep -o '"sim_time_ns": *[0-9]*' fabricsim.1.dir/summary.json | grep -o '[0-9]*$'), $(grep -o '"packet_hops": *[0-9]*' fabricsim.1.dir/summary.json)"
[[ $fin == 1024 ]] || echo "WARNING: htsim did not finish every flow by -end $HTSIM_END_US us; raise HTSIM_END_US" >&2

# Medians and per-pair ratios (htsim / fabricsim: above 1 means fabricsim is faster or smaller).
awk '{ k = $2; w[k, $1] = $3; c[k, $1] = $4; r[k, $1] = $5; if ($1 > n) n = $1 }
	function med(a, k,   i, m, v, t, j) { m = 0; for (i = 1; i <= n; i++) v[++m] = a[k, i]
		for (i = 2; i <= m; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
		return m % 2 ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2 }
	END {
		for (i = 1; i <= n; i++) printf "pair %d: wall %.2fx  cpu %.2fx  rss %.2fx\n", i,
			w["htsim", i] / w["fabricsim", i], c["htsim", i] / c["fabricsim", i], r["htsim", i] / r["fabricsim", i]
		printf "median fabricsim: wall %.2f s, cpu %.2f s, rss %.1f MiB\n", med(w, "fabricsim"), med(c, "fabricsim"), med(r, "fabricsim")
		printf "median htsim:     wall %.2f s, cpu %.2f s, rss %.1f MiB\n", med(w, "htsim"), med(c, "htsim"), med(r, "htsim")
	}' results.txt
