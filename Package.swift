// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "baton",
    products: [
        .library(name: "BatonCore", targets: ["BatonCore"]),
        .library(name: "BatonStore", targets: ["BatonStore"]),
        .library(name: "BatonService", targets: ["BatonService"]),
        .library(name: "BatonClient", targets: ["BatonClient"]),
        .executable(name: "batond", targets: ["batond"]),
        .executable(name: "baton", targets: ["baton"]),
        .executable(name: "baton-shim", targets: ["baton-shim"]),
    ],
    targets: [
        // SQLite's header only (libsqlite3-dev): BatonStore opens the library itself (SQLite), never links it.
        .systemLibrary(name: "CSQLite"),
        // libpq's header only (libpq-dev): BatonFleet opens the library itself (LibPQ), never links it.
        .systemLibrary(name: "CLibPQ"),
        // OpenSSL's headers only (libssl-dev): BatonHooks opens libcrypto itself (HMAC), never links it.
        .systemLibrary(name: "CCrypto"),
        .target(name: "CBatonSystem"),
        // The engine: state as values, decisions as pure functions; no Glibc, no C shim, no Dispatch.
        .target(name: "BatonEngine"),
        // The wire codec: the protocol's requests and responses, read and written by hand on hot paths.
        .target(name: "BatonWire", dependencies: ["BatonEngine"]),
        // The runtime: the event loop, the one worker shape, locks, threads, the clocks.
        .target(name: "BatonRuntime", dependencies: ["BatonEngine", "CBatonSystem"]),
        // Processes: spawning attempts, their process groups and cgroups, /proc, user lookups.
        .target(name: "BatonProcess", dependencies: ["BatonEngine", "BatonRuntime", "CBatonSystem"]),
        // Metrics: counters, histograms and their exposition, the process's own figures.
        .target(name: "BatonMetrics", dependencies: ["BatonEngine", "BatonRuntime"]),
        // The conductor (the loop's owner of runs), what serves it and the history's read side.
        .target(name: "BatonCore", dependencies: ["BatonEngine", "BatonWire", "BatonRuntime", "BatonProcess", "BatonMetrics", "CBatonSystem", "CCrypto"]),
        .executableTarget(name: "EmbedMigrations"),
        .plugin(
            name: "EmbedMigrationsPlugin",
            capability: .buildTool(),
            dependencies: ["EmbedMigrations"],
            path: "Sources/EmbedMigrationsPlugin"
        ),
        .target(
            name: "BatonStore",
            dependencies: ["BatonCore", "CSQLite", "CCrypto"],
            plugins: ["EmbedMigrationsPlugin"]
        ),
        .target(
            name: "BatonFleet",
            dependencies: ["BatonCore", "CLibPQ"],
            plugins: ["EmbedMigrationsPlugin"]
        ),
        .target(name: "BatonIPC", dependencies: ["BatonCore", "CBatonSystem"]),
        .executableTarget(name: "EmbedAssets"),
        .plugin(
            name: "EmbedAssetsPlugin",
            capability: .buildTool(),
            dependencies: ["EmbedAssets"],
            path: "Sources/EmbedAssetsPlugin"
        ),
        .target(
            name: "BatonDashboard",
            dependencies: ["BatonCore", "BatonIPC", "CBatonSystem"],
            exclude: ["Assets"],
            plugins: ["EmbedAssetsPlugin"]
        ),
        .target(name: "BatonService", dependencies: ["BatonCore"]),
        .target(name: "BatonHooks", dependencies: ["BatonCore", "BatonIPC", "CCrypto"]),
        .target(name: "BatonClient", dependencies: ["BatonCore", "BatonIPC"]),
        .executableTarget(name: "batond", dependencies: ["BatonCore", "BatonStore", "BatonFleet", "BatonIPC", "BatonService", "BatonHooks", "CBatonSystem"]),
        // The parent of each surviving attempt's action, in C: it starts in well under a millisecond.
        // Linked statically: swiftc links even a C executable with libswiftCore.so, whose loading at each
        // start cost more than the shim's whole work (docs/benchmarks.md, "The shim").
        // Static in release (no libswiftCore.so to load at each start); not in debug, where the
        // thread sanitizer's runtime cannot be linked statically. The package's is built by `cc` (Makefile).
        .executableTarget(name: "baton-shim", linkerSettings: [.unsafeFlags(["-static-executable"], .when(configuration: .release))]),
        .executableTarget(name: "baton", dependencies: ["BatonCore", "BatonStore", "BatonIPC", "BatonClient", "BatonDashboard"]),
        .executableTarget(name: "baton-bench", dependencies: ["BatonCore", "BatonStore", "BatonFleet", "BatonIPC", "BatonService", "CBatonSystem"]),
        .testTarget(name: "BatonCoreTests", dependencies: ["BatonCore", "BatonEngine", "BatonRuntime", "BatonProcess", "BatonMetrics"]),
        .testTarget(name: "BatonServiceTests", dependencies: ["BatonService", "BatonCore", "BatonIPC"]),
        .testTarget(name: "BatonStoreTests", dependencies: ["BatonStore", "CSQLite"]),
        .testTarget(name: "BatonIPCTests", dependencies: ["BatonIPC"]),
        .testTarget(name: "BatonHooksTests", dependencies: ["BatonHooks", "BatonCore", "BatonIPC"]),
        .testTarget(name: "BatonClientTests", dependencies: ["BatonClient", "BatonCore"]),
        .testTarget(name: "BatonDashboardTests", dependencies: ["BatonDashboard", "BatonIPC", "BatonCore"]),
        .testTarget(name: "BatonFleetTests", dependencies: ["BatonFleet", "BatonCore"]),
        .testTarget(name: "BatondTests", dependencies: ["batond"]),
        .testTarget(name: "BatonBenchTests", dependencies: ["baton-bench"]),
        .testTarget(name: "BatonCLITests", dependencies: ["baton", "BatonClient", "BatonCore", "BatonStore"], exclude: ["help.golden", "time-text.UTC.golden", "time-text.New_York.golden"]),
        .testTarget(name: "EndToEndTests", dependencies: ["batond", "baton", "BatonCore", "BatonIPC", "BatonStore", "BatonFleet", "BatonService", "BatonDashboard", "BatonHooks", "CBatonSystem", "BatonClient"]),
    ]
)
