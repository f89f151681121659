@testable import BatonProcess
@testable import BatonCore
@testable import BatonEngine
import Foundation
import Testing

/// An attempt's `$BATON_ARTIFACTS`, without a store: the runner makes the directory, hands what it
/// holds to its keeper once the process tree is gone and before the end is told, then removes it.
@Suite("Artifacts of an attempt")
struct ArtifactAttemptTests {
    /// A keeper that records what it is given (the directory still there) and lets the attempt go on.
    final class Keeper: ArtifactKeeper {
        struct Kept: Sendable {
            var scan: ArtifactScan
            var run: Int64
            var attempt: Int
            var present: Bool
            var text: String?
        }
        let kept = Recorder<Kept>()
        func keep(_ found: ArtifactScan, run: Int64, attempt: Int, done: @escaping @Sendable () -> Void) {
            let fd = found.files.first.map { found.open($0.name) } ?? -1
            var text: String?
            if fd >= 0 {
                text = String(decoding: FileHandle(fileDescriptor: fd, closeOnDealloc: true).readDataToEndOfFile(), as: UTF8.self)
            }
            kept.append(Kept(scan: found, run: run, attempt: attempt, present: FileManager.default.fileExists(atPath: found.directory), text: text))
            done()
        }
    }

    static func runner(_ keeper: Keeper, _ root: String) -> ExecRunner {
        var runner = ExecRunner()
        runner.artifacts = ArtifactSetup(directory: root, keeper: keeper)
        return runner
    }

    @Test("the directory is made empty and private, named in the environment, kept before the end is told, removed after")
    func keptThenRemoved() async throws {
        let root = NSTemporaryDirectory() + "baton-artifacts-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let keeper = Keeper()
        var action = Action(name: "t", exec: ["sh", "-c", "stat -c %a \"$BATON_ARTIFACTS\"; ls -A \"$BATON_ARTIFACTS\" | wc -l; echo made > \"$BATON_ARTIFACTS/out.txt\"; exit 3"])
        action.artifactsKeep = 1 << 20
        let probe = AttemptProbe(Self.runner(keeper, root), Job(runID: 7, action: action, attempt: 2, params: [:]))
        let outcome = await probe.outcome()
        #expect(String(decoding: outcome.output, as: UTF8.self) == "700\n0\n")
        let kept = try #require(keeper.kept.all.first)
        #expect(kept.run == 7 && kept.attempt == 2)
        #expect(kept.scan.directory == root + "/7-2")
        #expect(kept.scan.files == [ArtifactScan.File(name: "out.txt", size: 5)])
        #expect(kept.present, "the directory is there while it is kept")
        #expect(kept.text == "made\n")
        #expect(!FileManager.default.fileExists(atPath: root + "/7-2"), "removed once kept, before the end was told")
        #expect(try FileManager.default.attributesOfItem(atPath: root)[.posixPermissions] as? Int == 0o711)
    }

    @Test("an action without artifacts gets no directory and no variable; nothing is kept")
    func none() async throws {
        let root = NSTemporaryDirectory() + "baton-artifacts-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let keeper = Keeper()
        let action = Action(name: "t", exec: ["sh", "-c", "echo \"[$BATON_ARTIFACTS]\""])
        let outcome = await AttemptProbe(Self.runner(keeper, root), Job(runID: 1, action: action, attempt: 1, params: [:])).outcome()
        #expect(String(decoding: outcome.output, as: UTF8.self) == "[]\n")
        #expect(keeper.kept.all.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: root))
    }

    @Test("a start that fails leaves no directory behind")
    func failedStart() async throws {
        let root = NSTemporaryDirectory() + "baton-artifacts-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        let keeper = Keeper()
        var action = Action(name: "t", exec: ["/nonexistent/program"])
        action.artifactsKeep = 1 << 20
        let outcome = await AttemptProbe(Self.runner(keeper, root), Job(runID: 1, action: action, attempt: 1, params: [:])).outcome()
        #expect(!outcome.result.started, "\(outcome.result)")
        #expect(keeper.kept.all.isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: root).isEmpty)
    }

    @Test("the scan lists regular files by path, never through a link, and names the rest")
    func scan() throws {
        let root = NSTemporaryDirectory() + "baton-artifacts-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/d/e", withIntermediateDirectories: true)
        try Data("x".utf8).write(to: URL(fileURLWithPath: root + "/d/e/f"))
        try FileManager.default.createSymbolicLink(atPath: root + "/up", withDestinationPath: "/etc")
        #expect(mkfifo(root + "/p", 0o600) == 0)
        let scan = ArtifactScan.look(root, bound: 10)
        #expect(scan.files.map(\.name) == ["d/e/f"])
        #expect(Set(scan.notices) == ["up: a symlink, not followed", "p: not a regular file (a device, FIFO or socket), not kept"])
        #expect(scan.open("up/passwd") < 0, "a link on the way is not followed")
        #expect(scan.open("../etc/passwd") < 0)
        let fd = scan.open("d/e/f")
        #expect(fd >= 0)
        close(fd)
    }
}

extension ArtifactAttemptTests {
    @Test("a run's user that cannot search a directory above its own is told which, and gets none")
    func outOfReach() throws {
        let root = NSTemporaryDirectory() + "baton-artifacts-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/state", withIntermediateDirectories: true)
        let nobody = RunAs(named: "nobody", user: "nobody", uid: 65_534, gid: 65_534, groups: [], home: "/nonexistent", shell: "/bin/sh")
        chmod(root, 0o755)
        chmod(root + "/state", 0o750)
        #expect(ArtifactSetup.outOfReach(root + "/state/history-artifacts/1-1", for: nobody) == root + "/state")
        let setup = ArtifactSetup(directory: root + "/state/history-artifacts", keeper: Keeper())
        guard geteuid() == 0 else { return }
        guard case let .failure(why) = setup.make(run: 1, attempt: 1, owner: nobody) else { Issue.record("made"); return }
        #expect(why.message.contains("nobody cannot reach its $BATON_ARTIFACTS"), "\(why.message)")
        #expect(why.message.contains("\(root)/state is not searchable by it"), "\(why.message)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root + "/state/history-artifacts").isEmpty)
        chmod(root + "/state", 0o751)
        #expect(ArtifactSetup.outOfReach(root + "/state/history-artifacts/1-1", for: nobody) == nil)
        guard case let .success(path) = setup.make(run: 1, attempt: 1, owner: nobody) else { Issue.record("not made"); return }
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.ownerAccountID] as? Int == 65_534)
    }
}
