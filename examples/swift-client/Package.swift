// swift-tools-version:6.0
// Presses batond's `hello` from Swift and prints its phases as they come. Depends on this
// repository by path, so it builds offline: `swift build`, then `.build/debug/press`
// (BATON_SOCKET or --socket PATH, as for `baton`; an action name as the argument, else hello).
import PackageDescription

let package = Package(
    name: "swift-client",
    dependencies: [
        .package(name: "baton", path: "../.."),
    ],
    targets: [
        .executableTarget(name: "press", dependencies: [.product(name: "BatonClient", package: "baton")]),
    ]
)
