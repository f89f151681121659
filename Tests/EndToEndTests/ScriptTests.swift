import Foundation
import Testing

/// scripts/packages.sh, which the README's two commands use to install what is missing, run
/// with stand-ins for dpkg-query and apt-get that record what they are asked.
@Suite("The set-up scripts", .offPool)
struct ScriptTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL.path

    func ensure(_ packages: [String], installed: [String]) throws -> (code: Int32, aptCalls: [String]) {
        let bin = NSTemporaryDirectory() + "baton-fakeapt-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: bin) }
        let fakes = [
            "dpkg-query": "#!/bin/sh\nfor last; do :; done\nfor p in $INSTALLED; do [ \"$p\" = \"$last\" ] && { printf 'install ok installed'; exit 0; }; done\nexit 1\n",
            "apt-get": "#!/bin/sh\necho \"$*\" >> \"$APT_LOG\"\n",
        ]
        for (name, text) in fakes {
            try installExecutable(text, at: bin + "/" + name)
        }
        let log = bin + "/apt.log"
        let script = ". scripts/packages.sh; ensure_packages \(packages.joined(separator: " "))"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "cd \(Self.root) && \(script)"]
        process.environment = ["PATH": bin + ":/usr/bin:/bin", "INSTALLED": installed.joined(separator: " "), "APT_LOG": log]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let calls = (try? String(contentsOfFile: log, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
        return (process.terminationStatus, calls)
    }

    @Test("only the missing packages are installed, after one apt-get update; none missing, apt-get is not run")
    func onlyMissing() throws {
        let some = try ensure(["sqlite3", "zsh", "make"], installed: ["make"])
        #expect(some.code == 0)
        #expect(some.aptCalls == ["update -qq", "install -y -qq --no-install-recommends sqlite3 zsh"])
        let none = try ensure(["sqlite3", "make"], installed: ["make", "sqlite3"])
        #expect(none.code == 0)
        #expect(none.aptCalls.isEmpty)
    }

    @Test("the test command installs every package a test uses: each tool the tests call is in the list")
    func listsWhatTestsUse() throws {
        let text = try String(contentsOfFile: Self.root + "/scripts/packages.sh", encoding: .utf8)
        for package in ["libsqlite3-dev", "libpq-dev", "libssl-dev", "pkg-config", "postgresql", "iproute2", "sqlite3", "systemd", "zsh", "python3", "make", "e2fsprogs", "procps", "man-db", "prometheus", "debootstrap", "systemd-container", "lintian"] {
            #expect(text.contains(" \(package)") || text.contains("(\(package)"), "\(package)")
        }
        let test = try String(contentsOfFile: Self.root + "/scripts/test", encoding: .utf8)
        #expect(test.contains("ensure_packages \"${build_packages[@]}\" \"${test_packages[@]}\""))
        let ci = try String(contentsOfFile: Self.root + "/.ci/run", encoding: .utf8)
        #expect(ci.contains("scripts/test"))
    }
}
