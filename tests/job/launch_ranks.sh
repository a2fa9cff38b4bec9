#!/usr/bin/env bash
# launch_ranks.sh — a minimal launcher, as torchrun would start a job: N rank processes of one
# command, each with RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
# and GT_ROLE in its environment; "{RANK}" in the command becomes the rank. Waits for all of
# them and exits with the first non-zero status (0 when all succeeded).
#   launch_ranks.sh N ROLE -- CMD ARGS...
set -u
n=${1:?usage: launch_ranks.sh N ROLE -- CMD ARGS...}; role=${2:?}; shift 2
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "launch_ranks.sh: no command" >&2; exit 64; }
pids=()
for ((r = 0; r < n; r++)); do
	args=()
	for a in "$@"; do args+=("${a//\{RANK\}/$r}"); done
	RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n GROUP_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
		GT_ROLE=$role "${args[@]}" &
	pids+=($!)
done
status=0
for p in "${pids[@]}"; do
	wait "$p"; rc=$?
	[ "$status" -eq 0 ] && [ "$rc" -ne 0 ] && status=$rc
done
exit "$status"
