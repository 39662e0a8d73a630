#!/usr/bin/env bash
# Start or stop a one-node Slurm cluster on this machine without systemd, for tests of
# `fabricsim sweep --slurm` (sweep/slurm_integration_test.go) and for trying it by hand.
#
#   scripts/slurm-single-node.sh start    # munged, slurmctld, slurmd; waits until the node is idle
#   scripts/slurm-single-node.sh stop     # kills the daemons that start started, by their PIDs
#   scripts/slurm-single-node.sh status
#
# Needs root and Debian's packages:
#   DEBIAN_FRONTEND=noninteractive apt-get install -y slurmctld slurmd slurm-client munge
# It writes /etc/slurm/slurm.conf (an existing one not written by this script is kept as
# slurm.conf.orig-fabricsim and put back by stop), creates /etc/munge/munge.key if absent,
# and keeps PIDs, logs and Slurm state in $SLURM_SINGLE_NODE_STATE (default
# /var/tmp/fabricsim-slurm). Accounting is off, so sacct does not work: by design, the sweep
# backend must not need it.
set -euo pipefail

STATE=${SLURM_SINGLE_NODE_STATE:-/var/tmp/fabricsim-slurm}
CONF=/etc/slurm/slurm.conf
MARK="# written by fabricsim scripts/slurm-single-node.sh"

die() { echo "slurm-single-node: $*" >&2; exit 1; }
log() { echo "slurm-single-node: $*" >&2; }

# alive PIDFILE NAME: the process in PIDFILE runs and is NAME (guards against reused PIDs).
alive() {
	local pid
	[[ -s $1 ]] || return 1
	pid=$(<"$1")
	[[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$2" ]]
}

start() {
	[[ $(id -u) == 0 ]] || die "start must run as root (it starts munged, slurmctld and slurmd)"
	local b
	for b in munged slurmctld slurmd sinfo sbatch squeue; do
		command -v "$b" >/dev/null || die "$b not found; install the packages: DEBIAN_FRONTEND=noninteractive apt-get install -y slurmctld slurmd slurm-client munge"
	done
	if alive "$STATE/slurmctld.pid" slurmctld && alive "$STATE/slurmd.pid" slurmd; then
		log "already running (state in $STATE)"
		return 0
	fi
	mkdir -p "$STATE/ctld" "$STATE/d"

	# munge: a key, then the daemon as the munge user (it refuses to run as root).
	local key=/etc/munge/munge.key
	if [[ ! -s $key ]]; then
		if command -v mungekey >/dev/null; then
			mungekey --create --keyfile="$key"
		else
			dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
		fi
		log "created $key"
	fi
	chown munge:munge "$key" && chmod 400 "$key"
	mkdir -p /run/munge /var/log/munge /var/lib/munge
	chown munge:munge /run/munge /var/log/munge /var/lib/munge /etc/munge
	chmod 755 /run/munge
	if ! alive "$STATE/munged.pid" munged; then
		rm -f "$STATE/munged.pid"
		touch "$STATE/munged.pid" && chown munge:munge "$STATE/munged.pid"
		runuser -u munge -- munged --force --pid-file="$STATE/munged.pid"
	fi
	local i
	for i in $(seq 50); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.1; done
	munge -n </dev/null | unmunge >/dev/null || die "munge does not work (see /var/log/munge/munged.log)"

	# slurm.conf for this node alone, no cgroups, no accounting.
	if [[ -f $CONF ]] && ! grep -qF "$MARK" "$CONF"; then
		mv "$CONF" "$CONF.orig-fabricsim"
		log "kept the existing $CONF as $CONF.orig-fabricsim"
	fi
	local host node
	host=$(hostname -s)
	node=$(slurmd -C | head -n1)
	[[ $node == NodeName=* ]] || die "slurmd -C printed no node line: $node"
	mkdir -p /etc/slurm
	cat >"$CONF" <<-EOF
		$MARK
		ClusterName=fabricsim
		SlurmctldHost=$host(127.0.0.1)
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		StateSaveLocation=$STATE/ctld
		SlurmdSpoolDir=$STATE/d
		SlurmctldPidFile=$STATE/slurmctld.pid
		SlurmdPidFile=$STATE/slurmd.pid
		SlurmctldLogFile=$STATE/slurmctld.log
		SlurmdLogFile=$STATE/slurmd.log
		ProctrackType=proctrack/linuxproc
		TaskPlugin=task/none
		AccountingStorageType=accounting_storage/none
		JobAcctGatherType=jobacct_gather/none
		JobCompType=jobcomp/none
		SchedulerType=sched/backfill
		SchedulerParameters=batch_sched_delay=0
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core
		ReturnToService=2
		MaxArraySize=10001
		MinJobAge=300
		SlurmctldTimeout=30
		SlurmdTimeout=30
		$node NodeAddr=127.0.0.1 State=UNKNOWN
		PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
	EOF

	# -c: start from empty state, so jobs of an earlier test run do not come back.
	slurmctld -c
	for i in $(seq 100); do alive "$STATE/slurmctld.pid" slurmctld && break; sleep 0.1; done
	alive "$STATE/slurmctld.pid" slurmctld || { tail -n 20 "$STATE/slurmctld.log" >&2; die "slurmctld did not start"; }
	slurmd
	for i in $(seq 100); do alive "$STATE/slurmd.pid" slurmd && break; sleep 0.1; done
	alive "$STATE/slurmd.pid" slurmd || { tail -n 20 "$STATE/slurmd.log" >&2; die "slurmd did not start"; }

	local st=""
	for i in $(seq 120); do
		st=$(sinfo --noheader --format=%T 2>/dev/null | head -n1 || true)
		[[ $st == idle ]] && break
		# A node left down or drained by an earlier run comes back.
		[[ $st == down* || $st == drain* ]] && scontrol update NodeName="${node#NodeName=}" State=RESUME 2>/dev/null || true
		sleep 0.5
	done
	if [[ $st != idle ]]; then
		tail -n 20 "$STATE/slurmctld.log" "$STATE/slurmd.log" >&2 || true
		die "the node is '$st', not idle, after 60 s"
	fi
	log "running: node ${host} idle (state, logs and PIDs in $STATE)"
}

stop() {
	local name f pid i
	for name in slurmd slurmctld munged; do
		f=$STATE/$name.pid
		if alive "$f" "$name"; then
			pid=$(<"$f")
			kill "$pid"
			for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
			kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
			log "stopped $name ($pid)"
		fi
		rm -f "$f"
	done
	if [[ -f $CONF.orig-fabricsim ]]; then
		mv "$CONF.orig-fabricsim" "$CONF"
		log "restored the original $CONF"
	fi
}

status() {
	local name ok=0
	for name in munged slurmctld slurmd; do
		if alive "$STATE/$name.pid" "$name"; then echo "$name: running ($(<"$STATE/$name.pid"))"; else echo "$name: stopped"; ok=1; fi
	done
	return $ok
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
*) die "usage: $0 start|stop|status" ;;
esac
