#!/usr/bin/env bash
# Runs one of Baton's fuzzers (or all) from the seed corpus in Tests/Fuzz/corpus.
#   Tests/Fuzz/run.sh frames 60          # 60 seconds
#   Tests/Fuzz/run.sh all -runs=1000000  # a million executions each
# New inputs go to .build/fuzz/corpus/TARGET (the seeds are never changed); a crash leaves
# .build/fuzz/crash-… to turn into a regression test.
set -euo pipefail
cd "$(dirname "$0")/../.."
target=${1:?usage: run.sh frames|requests|config|durations|times|patterns|conductor|http|dashboard|hooks|all SECONDS|-runs=N}
limit=${2:-60}
[[ $limit == -* ]] || limit="-max_total_time=$limit"
[ -x .build/fuzz/fuzz-frames ] || Tests/Fuzz/build.sh
targets=("$target")
[ "$target" = all ] && targets=(frames requests config durations times patterns conductor http dashboard hooks)
for name in "${targets[@]}"; do
    mkdir -p ".build/fuzz/corpus/$name"
    echo "== $name"
    ".build/fuzz/fuzz-$name" "$limit" -max_len=4096 -artifact_prefix=.build/fuzz/ -print_final_stats=1 \
        ".build/fuzz/corpus/$name" "Tests/Fuzz/corpus/$name" 2>&1 | grep -E "^(stat::number_of_executed_units|Done|==.*ERROR|SUMMARY)|deadly|crash-" || true
done
