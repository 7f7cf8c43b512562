#!/usr/bin/env bash
# Long operator-chaos runs (issue 13): the OperatorChaosTests suite with more steps and
# several seeds, one after another. The test command runs one 50-step seed; this is the soak.
#
# Usage: scripts/operator-chaos-soak.sh [STEPS] [SEEDS...]
#   STEPS   actions per run (default 500)
#   SEEDS   seeds to run (default: 3 random ones); a failing seed is printed and replays with
#           CHAOS_SEED=<seed> CHAOS_STEPS=<steps> swift test --filter OperatorChaos
# Needs a build with tests (swift build --build-tests) and, for the full-disk action, root
# (a tmpfs is mounted for the data directory). Results go to .build/operator-chaos/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh >/dev/null
steps="${1:-500}"
shift || true
seeds=("$@")
if [ "${#seeds[@]}" -eq 0 ]; then seeds=($RANDOM$RANDOM $RANDOM$RANDOM $RANDOM$RANDOM); fi
out=.build/operator-chaos
mkdir -p "$out"
failed=0
for seed in "${seeds[@]}"; do
    log="$out/seed-$seed.log"
    start=$(date +%s)
    if CHAOS_SEED="$seed" CHAOS_STEPS="$steps" swift test --skip-build --filter OperatorChaos >"$log" 2>&1; then
        result=passed
    else
        result=FAILED
        failed=1
    fi
    summary=$(grep -o 'operator chaos: seed [0-9]*: .*' "$log" | tail -1 || true)
    echo "seed $seed, $steps steps: $result in $(( $(date +%s) - start )) s. ${summary#operator chaos: seed $seed: }"
done
exit "$failed"
