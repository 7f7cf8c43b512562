# Shared by scripts/fuzz-*.sh (sourced, not run): the environment variables every fuzz script
# takes, the release build of a fuzz package with the sanitizers, and the libFuzzer flags
# every target uses.
#
#   fuzz_setup PACKAGE SCRATCH DEFAULT_MAX_LEN RUNS
#     PACKAGE  the package folder under Fuzz/ (e.g. ProtocolFuzz)
#     SCRATCH  its build folder under the repository root (e.g. .build-fuzz)
#   Sets: root, runs, jobs, scratch, args (the common libFuzzer flags), and builds.

fuzz_setup() {
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
    local package=$1 default_max_len=$3
    scratch="$root/$2"
    runs=${4:-10000000}
    jobs=${FUZZ_JOBS:-1}
    local sanitizers=${FUZZ_SANITIZERS:-fuzzer,address}
    local max_len=${FUZZ_MAX_LEN:-$default_max_len}

    (cd "$root/Fuzz/$package" &&
        swift build -c release --scratch-path "$scratch" -Xswiftc "-sanitize=$sanitizers")

    mkdir -p "$scratch/corpus" "$root/fuzz-artifacts"
    args=(
        -runs="$runs"
        -max_len="$max_len"
        -rss_limit_mb=2048
        -print_final_stats=1
        -artifact_prefix="$root/fuzz-artifacts/"
    )
}

# For targets that run the muxer and the reader: bound each input's time and allocations, and
# with FUZZ_JOBS > 1 run independent processes (-jobs/-workers) rather than -fork, which
# re-runs its share of the corpus every few seconds and costs more than it finds here.
fuzz_file_target_args() {
    args+=(-timeout=60 -malloc_limit_mb=512)
    if [ "$jobs" -gt 1 ]; then
        args=(-runs=$((runs / jobs)) "${args[@]:1}" -jobs="$jobs" -workers="$jobs")
    fi
}
