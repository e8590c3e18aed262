#!/usr/bin/env bash
# with-cpu-hog.sh COMMAND [ARGS...]: runs COMMAND with a CPU-bound busy loop
# on every core beside it (HOG_CPUS overrides how many), at the same nice
# level as COMMAND, so that the tests meet a machine as loaded as a shared
# CI host or a laptop compiling something else. The loops stop when
# COMMAND ends, however it ends; its exit status is the script's.
set -euo pipefail
if [ $# -eq 0 ]; then
	echo "usage: $0 COMMAND [ARGS...]" >&2
	exit 2
fi
n=${HOG_CPUS:-$(nproc)}
pids=()
stop() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait "${pids[@]}" 2>/dev/null || true
}
trap stop EXIT
trap 'exit 130' INT TERM
for ((i = 0; i < n; i++)); do
	bash -c 'while :; do :; done' &
	pids+=($!)
done
echo "with-cpu-hog: $n busy loops (pids ${pids[*]}) beside: $*" >&2
start=$(date +%s)
status=0
"$@" || status=$?
echo "with-cpu-hog: $* exited $status after $(($(date +%s) - start)) s beside $n busy loops" >&2
exit $status
