import BatonCore
import Foundation
import Testing

/// A full runtime directory (/run): the shim's status goes to the attempt's directory on the disk,
/// and batond, reading it there, removes it too at the run's end (review-shimplace4, finding 3:
/// each run left `DATABASE-shims/RUN-1/status` until the next start).
extension ShimPlaceEndToEndTests {
    @Test("a full runtime tmpfs: five runs under the shim succeed, each status read from the disk, and no attempt's directory is left on the disk")
    func fullRuntimeLeavesNothing() throws {
        let (scratch, runtime) = try Self.scratch()
        defer { withExtendedLifetime(scratch) {} }
        let mounted = try execute("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", runtime])
        try #require(mounted.code == 0, "cannot mount a tmpfs at \(runtime): \(mounted.stderr)")
        defer { _ = try? execute("/usr/bin/umount", [runtime]) }
        let daemon = try Daemon(config: #"{ actions: { t: { exec: ["true"], survivesRestart: true } } }"#, environment: ["RUNTIME_DIRECTORY": runtime])
        defer { daemon.stop() }
        #expect(try Self.shims(daemon).hasPrefix(runtime + "/shims-"), "\(daemon.stderr)")
        // Filled: directories can still be made there, a status file's data cannot be written.
        _ = try execute("/usr/bin/dd", ["if=/dev/zero", "of=\(runtime)/filler", "bs=4096"])
        for _ in 1...5 {
            let run = try daemon.baton("run", "t")
            #expect(run.code == 0, "\(run.stdout) \(run.stderr)")
        }
        let left = (try? FileManager.default.contentsOfDirectory(atPath: daemon.database + "-shims")) ?? []
        #expect(left.isEmpty, "left on the disk: \(left)")
    }
}
