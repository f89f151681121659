@testable import BatonProcess
@testable import BatonCore
import Foundation
import Testing

/// batond's directory of hook output files: used only when it is batond's own, emptied at start
/// of one instance's files only, never through a link (issue 37, item 11).
@Suite("Hook output files: batond's own directory")
struct HookOutputsTests {
    static func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "baton-hook-outputs-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("what is at the directory's name decides whether batond uses it", arguments: [
        ("nothing: made, mode 0711", "none", true),
        ("batond's own directory", "own", true),
        ("a symlink to a directory of batond's", "symlink", false),
        ("a directory others may write", "open", false),
        ("another user's directory", "theirs", false),
    ])
    func taken(_ story: String, setup: String, used: Bool) throws {
        let temporary = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        let name = "\(temporary)/baton-hooks-\(geteuid())"
        switch setup {
        case "own": #expect(mkdir(name, 0o700) == 0)
        case "symlink":
            #expect(mkdir(temporary + "/elsewhere", 0o711) == 0 && symlink(temporary + "/elsewhere", name) == 0)
        case "open": #expect(mkdir(name, 0o700) == 0 && chmod(name, 0o777) == 0)
        case "theirs":
            #expect(mkdir(name, 0o711) == 0)
            if geteuid() != 0 { return }   // only root can give it away
            #expect(chown(name, 65534, 65534) == 0)
        default: break
        }
        let outputs = HookOutputs(temporary: temporary)
        #expect((outputs != nil) == used, "\(story)")
        guard used else { return }
        var info = stat()
        #expect(lstat(name, &info) == 0 && info.st_mode & 0o7777 == 0o711, "\(story)")
    }

    @Test("removeAll takes only the files of its prefix, and a link itself, never what it points at")
    func removeAll() throws {
        let temporary = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        guard let outputs = HookOutputs(temporary: temporary) else { Issue.record("batond's directory was not made"); return }
        let mine = HookOutputs.prefix(instance: "/var/lib/baton/history.sqlite")
        let other = HookOutputs.prefix(instance: "/home/ann/.local/state/baton/history.sqlite")
        #expect(mine != other)
        for prefix in [mine, mine, other] {
            guard case let .success(file) = outputs.create(prefix: prefix + "7-1-") else { Issue.record("not made"); return }
            close(file.fd)
        }
        let target = temporary + "/precious"
        FileManager.default.createFile(atPath: target, contents: Data("keep".utf8))
        #expect(symlink(target, outputs.path + "/" + mine + "9-1-link") == 0)
        #expect(outputs.removeAll(prefix: mine) == 3)
        let left = try FileManager.default.contentsOfDirectory(atPath: outputs.path)
        #expect(left.count == 1 && left.allSatisfy { $0.hasPrefix(other) }, "\(left)")
        #expect(FileManager.default.contents(atPath: target) == Data("keep".utf8))
    }
}
