#!/usr/bin/env bash
# Builds Baton, starts batond on examples/baton.json5 with a temporary socket and database,
# and shows it working: a run, a failure, a busy rejection, status, a cancel, history and one
# run's story; batond's own log comes last, apart. Installs the Debian packages the build needs
# when they are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/packages.sh
ensure_packages "${build_packages[@]}"
echo "Building (release; the first build takes a few minutes) ..."
# The same release binaries as `make` and the package (the Swift runtime linked in).
make build >/dev/null
bin=$(swift build -c release --show-bin-path)
dir=$(mktemp -d)
trap 'kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; rm -rf "$dir"' EXIT
"$bin/batond" --config examples/baton.json5 --socket "$dir/baton.sock" --database "$dir/history.sqlite" 2>"$dir/batond.log" &
daemon=$!
export BATON_SOCKET="$dir/baton.sock"
for _ in $(seq 200); do grep -q ready "$dir/batond.log" && break; sleep 0.05; done

baton() { "$bin/baton" "$@"; }
show() { echo; echo "\$ $*"; "$@" || echo "(exit code $?)"; }
show baton run hello
show baton run deploy -p env=prod
baton run slow-build --policy reject --detach >/dev/null
show baton run slow-build --policy reject
show baton run deploy -p env=dev
show baton status
show baton cancel slow-build
show baton history
show baton show 1

kill "$daemon"; wait "$daemon" || true
echo; echo "batond's log (stderr; under systemd it goes to the journal):"
sed 's/^/  | /' "$dir/batond.log"
