#!/usr/bin/env bash
# A real one-node Slurm cluster for the tests: munged, slurmctld and slurmd, with
# config, state, logs and pid files under DIR (nothing in /etc/slurm is touched).
#
#   tests/slurm/cluster.sh start DIR   install slurm-wlm + munge if missing (apt, root),
#                                      start the daemons, wait until the node is idle,
#                                      print the path of the rendered slurm.conf
#   tests/slurm/cluster.sh stop DIR    cancel the cluster's jobs, stop each daemon by
#                                      the pid in its pid file
#
# Clients (sbatch, squeue, snakemake) reach this cluster with SLURM_CONF=DIR/slurm.conf.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The daemons live in sbin, which a non-login root shell may not have on PATH.
export PATH="$PATH:/usr/sbin:/sbin"

die() {
	echo "cluster.sh: $*" >&2
	exit 1
}

have_slurm() {
	local tool
	for tool in slurmctld slurmd sinfo sbatch squeue scancel munged mungekey; do
		command -v "$tool" >/dev/null || return 1
	done
}

install_slurm() {
	have_slurm && return 0
	[[ $EUID -eq 0 ]] || die "slurm-wlm/munge are not installed and only root can apt-get install them"
	command -v apt-get >/dev/null || die "slurm-wlm/munge are not installed and apt-get is not available"
	local log="$DIR/log/apt.log" cmd=(apt-get install -y -qq --no-install-recommends slurm-wlm munge)
	# A fresh machine may have no package lists yet: update once, then retry.
	if ! DEBIAN_FRONTEND=noninteractive "${cmd[@]}" >"$log" 2>&1; then
		apt-get update -qq >>"$log" 2>&1 || true
		DEBIAN_FRONTEND=noninteractive "${cmd[@]}" >>"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; die "apt-get install slurm-wlm munge failed (log: $log)"; }
	fi
	have_slurm || die "slurm-wlm/munge installed but their commands are not on PATH"
}

# A free TCP port pair (slurmctld, slurmd), so two clusters on one machine (two
# test sessions at once) do not collide on Slurm's default ports.
free_port_pair() {
	local port tries
	for ((tries = 0; tries < 50; tries++)); do
		port=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
			! (exec 3<>"/dev/tcp/127.0.0.1/$((port + 1))") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	die "no free port pair found"
}

render_conf() {
	local cpus mem_mb port
	cpus="$(nproc)"
	# Leave a tenth of the memory to the system and the daemons.
	mem_mb="$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)"
	port="$(free_port_pair)"
	sed -e "s|@DIR@|$DIR|g" -e "s|@MUNGE_DIR@|$MUNGE_DIR|g" \
		-e "s|@CPUS@|$cpus|g" -e "s|@MEM_MB@|$mem_mb|g" \
		-e "s|@CTLD_PORT@|$port|g" -e "s|@SLURMD_PORT@|$((port + 1))|g" \
		"$HERE/slurm.conf.in" >"$DIR/slurm.conf"
}

start_munge() {
	# munged runs as user munge and checks that nobody else can write where its
	# key and socket live; the test folder's parents are root-only, so munge gets
	# its own short folder under /tmp (a socket path must stay under 108 bytes).
	MUNGE_DIR="$(mktemp -d /tmp/evoflow-munge.XXXXXX)"
	echo "$MUNGE_DIR" >"$DIR/run/munge.dir"
	chown munge:munge "$MUNGE_DIR"
	chmod 0755 "$MUNGE_DIR"
	local key="$MUNGE_DIR/munge.key"
	[[ -f $key ]] || runuser -u munge -- mungekey --create --keyfile="$key"
	runuser -u munge -- munged \
		--socket="$MUNGE_DIR/munge.socket" --key-file="$key" \
		--pid-file="$MUNGE_DIR/munged.pid" --log-file="$MUNGE_DIR/munged.log" \
		--seed-file="$MUNGE_DIR/munged.seed"
	cp "$MUNGE_DIR/munged.pid" "$DIR/run/munged.pid"
}

wait_idle() {
	local state="" i
	for ((i = 0; i < 120; i++)); do
		state="$(sinfo --noheader --nodes=localhost --format=%t 2>/dev/null || true)"
		[[ $state == idle ]] && return 0
		sleep 0.5
	done
	echo "node state after 60 s: '${state}'" >&2
	tail -n 20 "$DIR"/log/*.log "$MUNGE_DIR/munged.log" >&2 || true
	return 1
}

# The jobstep plugin (snakemake-executor-plugin-slurm-jobstep 0.6.1) strips every
# SLURM_* variable but the job ids before its srun inside a job, SLURM_CONF
# included. Real clusters keep slurm.conf in /etc/slurm; ours is only reachable
# through SLURM_CONF, so DIR/bin/srun (put first on PATH by the tests, and so
# exported into every job) sets it again and runs the real srun.
write_srun_shim() {
	local real
	real="$(command -v srun)"
	printf '#!/bin/sh\nSLURM_CONF=%q exec %q "$@"\n' "$DIR/slurm.conf" "$real" >"$DIR/bin/srun"
	chmod +x "$DIR/bin/srun"
}

start() {
	mkdir -p "$DIR"/{bin,run,state/ctld,state/d,log}
	[[ ! -s $DIR/run/slurmctld.pid ]] || die "a cluster already runs from $DIR (stop it first)"
	install_slurm
	[[ $EUID -eq 0 ]] || die "the test cluster runs its daemons as root (SlurmUser=root)"
	start_munge
	render_conf
	write_srun_shim
	export SLURM_CONF="$DIR/slurm.conf"
	slurmctld
	slurmd -N localhost
	if ! wait_idle; then
		stop
		die "the node did not become idle"
	fi
	echo "$SLURM_CONF"
}

# Stop the daemon whose pid is in FILE, if that pid still runs the program NAME
# (a stale pid file must not make us signal an unrelated process).
stop_pid_file() {
	local file="$1" name="$2" pid i
	[[ -s $file ]] || return 0
	pid="$(<"$file")"
	if [[ $pid =~ ^[0-9]+$ ]] && [[ "$(cat "/proc/$pid/comm" 2>/dev/null || true)" == "$name" ]]; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$file"
}

stop() {
	export SLURM_CONF="$DIR/slurm.conf"
	if [[ -s $DIR/run/slurmctld.pid ]]; then
		# Every job on this cluster is ours: cancel them so no job step outlives it.
		local jobs
		jobs="$(squeue --noheader --format=%i 2>/dev/null || true)"
		if [[ -n $jobs ]]; then
			# shellcheck disable=SC2086
			scancel $jobs 2>/dev/null || true
			sleep 1
		fi
	fi
	stop_pid_file "$DIR/run/slurmd.pid" slurmd
	stop_pid_file "$DIR/run/slurmctld.pid" slurmctld
	stop_pid_file "$DIR/run/munged.pid" munged
	if [[ -s $DIR/run/munge.dir ]]; then
		local munge_dir
		munge_dir="$(<"$DIR/run/munge.dir")"
		if [[ $munge_dir == /tmp/evoflow-munge.* ]]; then
			rm -rf "$munge_dir"
		fi
		rm -f "$DIR/run/munge.dir"
	fi
}

[[ $# -eq 2 ]] || die "usage: $0 start|stop DIR"
DIR="$(realpath -m "$2")"
MUNGE_DIR=""
case "$1" in
start) start ;;
stop) stop ;;
*) die "usage: $0 start|stop DIR" ;;
esac
