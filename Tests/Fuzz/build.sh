#!/usr/bin/env bash
# Builds Baton's libFuzzer targets (swiftc -sanitize=fuzzer,address) into .build/fuzz:
#   frames    the socket's frame splitter (BatonIPC)
#   requests  the request decoder (JSON → Request)
#   config    the config parser (JSON5 → Config, every field checked)
#   durations DurationText.parse / format
#   times     the CLI's --since/--until parser
#   patterns  param patterns: compile, and match in linear time
#   conductor the conductor's pure state: random walks of events, every invariant checked each step
#   http      the metrics listener's HTTP request head parser (BatonIPC)
#   dashboard the dashboard's gate (with its sessions), query strings and history filter, after the head parser
#   hooks     the webhook listener's HookGate (signatures through libcrypto, pointers), after the head parser
# The modules are compiled straight with swiftc (SwiftPM would also instrument its build tools).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.build/fuzz
mkdir -p "$out/modules" "$out/obj"
# The C shim and a module map for it.
for source in Sources/CBatonSystem/*.c; do
    clang -c -g -fsanitize=fuzzer-no-link,address -I Sources/CBatonSystem/include "$source" -o "$out/obj/cbaton-$(basename "$source" .c).o"
done
cat > "$out/modules/module.modulemap" <<MAP
module CBatonSystem { header "$(pwd)/Sources/CBatonSystem/include/CBatonSystem.h" export * }
MAP

# The embedded migrations, as the build plugin makes them.
swift build --product EmbedMigrations >/dev/null
"$(swift build --show-bin-path)/EmbedMigrations" "$out/EmbeddedMigrations.swift" Migrations/*.sql

flags=(-swift-version 6 -sanitize=fuzzer,address -parse-as-library -g -Onone -enable-testing -package-name baton -I "$(pwd)/$out/modules" -I "$(pwd)/Sources/CBatonSystem/include" -I "$(pwd)/Sources/CSQLite" -I "$(pwd)/Sources/CCrypto")
compile() { # name, sources...
    local name=$1; shift
    local sources=()
    for source in "$@"; do sources+=("$(pwd)/$source"); done
    # Each module's objects in a folder of its own: two modules may have a file of one name (Heap.swift).
    mkdir -p "$out/obj/$name"
    (cd "$out/obj/$name" && swiftc "${flags[@]}" -module-name "$name" -emit-module -emit-module-path "../../modules/$name.swiftmodule" -c "${sources[@]}")
}
compile BatonEngine $(find Sources/BatonEngine -name "*.swift")
for module in BatonWire BatonRuntime BatonProcess BatonMetrics BatonCore; do
    compile "$module" $(find "Sources/$module" -name "*.swift")
done
compile BatonStore $(find Sources/BatonStore -name "*.swift") "$out/EmbeddedMigrations.swift"
compile BatonIPC $(find Sources/BatonIPC -name "*.swift")
compile BatonHooks $(find Sources/BatonHooks -name "*.swift")

objects=("$out"/obj/*.o "$out"/obj/*/*.o)
link() { # target, sources...
    local target=$1; shift
    swiftc "${flags[@]}" -module-name "Fuzz_$target" "$@" "${objects[@]}" -lsqlite3 -lcrypto -o "$out/fuzz-$target"
}
link frames Tests/Fuzz/FrameFuzzer.swift
link http Tests/Fuzz/HTTPFuzzer.swift
link hooks Tests/Fuzz/HooksFuzzer.swift
link dashboard Tests/Fuzz/DashboardFuzzer.swift Sources/BatonDashboard/Gate.swift Sources/BatonDashboard/Sessions.swift Sources/BatonDashboard/Route.swift Sources/BatonDashboard/QueryString.swift
link requests Tests/Fuzz/RequestFuzzer.swift
link durations Tests/Fuzz/DurationFuzzer.swift
link patterns Tests/Fuzz/PatternFuzzer.swift
link conductor Tests/Fuzz/ConductorFuzzer.swift Tests/BatonCoreTests/ConductorWalk.swift
link times Tests/Fuzz/TimeFuzzer.swift Sources/baton/TimeText.swift
# The config names ProcessTreeSetting, which lives beside the daemon's process-tree code: only the enum is taken.
sed -n '/^enum ProcessTreeSetting/,/^}/p' Sources/batond/Daemon+ProcessTree.swift > "$out/ProcessTreeSetting.swift"
link config Tests/Fuzz/ConfigFuzzer.swift Sources/batond/Config*.swift Sources/batond/WebhookConfig.swift Sources/batond/JSONValue*.swift "$out/ProcessTreeSetting.swift"
echo "built: $(ls "$out"/fuzz-* | tr '\n' ' ')"
