#!/usr/bin/env bash
# Builds Baton, starts batond on examples/baton.json5 with a temporary socket and database,
# and shows it working: a run, a failure, a busy rejection, status, history and one run's story.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product batond >/dev/null
swift build -c release --product baton >/dev/null
bin=$(swift build -c release --show-bin-path)
dir=$(mktemp -d)
trap 'kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; rm -rf "$dir"' EXIT
"$bin/batond" --config examples/baton.json5 --socket "$dir/baton.sock" --database "$dir/history.sqlite" &
daemon=$!
export BATON_SOCKET="$dir/baton.sock"
for _ in $(seq 100); do "$bin/baton" status >/dev/null 2>&1 && break; sleep 0.05; done

show() { echo; echo "\$ $*"; "$@" || echo "(exit code $?)"; }
show "$bin/baton" run hello
show "$bin/baton" run deploy -p env=prod
"$bin/baton" run slow-build --policy reject --detach >/dev/null
show "$bin/baton" run slow-build --policy reject
show "$bin/baton" run deploy -p env=dev
show "$bin/baton" status
show "$bin/baton" cancel slow-build
show "$bin/baton" history
show "$bin/baton" show 1
