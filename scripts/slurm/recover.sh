#!/usr/bin/env bash
# Recover a Slurm run of this workflow whose snakemake process died without
# cleaning up (SIGKILL, a lost login node, an out-of-memory kill):
#   1. cancel this workflow's Slurm jobs that are still queued or running,
#   2. release Snakemake's lock (`snakemake --unlock`),
#   3. run again with --rerun-incomplete, so every job that was running when
#      snakemake died is redone instead of its half-written outputs being used.
#
# Usage, from the folder you ran snakemake in, with the same options:
#   scripts/slurm/recover.sh --profile slurm --configfile config/paper/fedse_qwen2.5-7b.yaml
#
# Which jobs are ours: the Slurm executor names every job of one snakemake run
# after that run's ID and logs "SLURM run ID: <id>" in .snakemake/log/ of the
# working folder. Only the current user's pending/running jobs whose name is one
# of those IDs are cancelled; other workflows and users are never touched.
set -euo pipefail

die() {
	echo "recover.sh: $*" >&2
	exit 1
}

# The working folder: --directory/-d if given, like snakemake itself.
workdir="$PWD"
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	case "${args[i]}" in
	-d | --directory) workdir="${args[i + 1]:-}" ;;
	--directory=*) workdir="${args[i]#--directory=}" ;;
	esac
done
workdir="$(realpath "$workdir")" || die "no such folder: $workdir"
[[ -d $workdir/.snakemake ]] || die "$workdir/.snakemake does not exist: run this where snakemake ran"

# Refuse while a snakemake run is still alive in this folder: its jobs are not
# orphans. (Job steps inside Slurm jobs run `snakemake --executor slurm-jobstep`
# and rule scripts live under .snakemake/scripts; neither counts.)
for proc in /proc/[0-9]*; do
	[[ $proc == "/proc/$$" ]] && continue
	[[ "$(readlink "$proc/cwd" 2>/dev/null || true)" == "$workdir" ]] || continue
	cmd="$(tr '\0' ' ' <"$proc/cmdline" 2>/dev/null || true)"
	if [[ $cmd =~ (^|/|-m\ )snakemake(\ |$) && $cmd != *slurm-jobstep* ]]; then
		die "snakemake is still running in $workdir (pid ${proc#/proc/}): stop it first"
	fi
done

mapfile -t run_ids < <(
	grep -ho 'SLURM run ID: [A-Za-z0-9_-]*' "$workdir"/.snakemake/log/*.snakemake.log 2>/dev/null |
		awk '{print $4}' | sort -u
)
orphans=()
if ((${#run_ids[@]})); then
	# One line per job: "<id> <name>"; squeue lists pending and running jobs only.
	while read -r job_id job_name; do
		for run_id in "${run_ids[@]}"; do
			[[ $job_name == "$run_id" ]] && orphans+=("$job_id")
		done
	done < <(squeue --noheader --user "$(id -un)" --format '%i %j')
fi

if ((${#orphans[@]})); then
	echo "recover.sh: cancelling ${#orphans[@]} orphaned Slurm job(s): ${orphans[*]}"
	scancel "${orphans[@]}"
	# Wait until none of them runs any more, so no cancelled job writes an output
	# while the rerun below writes the same file.
	ids="$(
		IFS=,
		echo "${orphans[*]}"
	)"
	for ((i = 0; i < 120; i++)); do
		live="$(squeue --noheader --jobs "$ids" --states=PENDING,RUNNING,COMPLETING,SUSPENDED \
			--format %i 2>/dev/null || true)"
		[[ -z $live ]] && break
		sleep 1
	done
	[[ -z $live ]] || die "jobs still alive two minutes after scancel: $live"
else
	echo "recover.sh: no orphaned Slurm jobs of this workflow"
fi

snakemake "$@" --unlock
echo "recover.sh: lock released; rerunning with --rerun-incomplete"
exec snakemake "$@" --rerun-incomplete
