@testable import batond
import Foundation
import Glibc
import Testing

/// The key file of secret params (review item 11): a crash's leftover temporary file is no
/// obstacle, and a file others may read, or another user's, is refused naming it.
@Suite struct SecretParamKeyTests {
    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "secret-key-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    @Test("a temporary file of the old fixed name (`.PID.tmp`) left by a crash: the key is made all the same, mode 0600, and read back the same")
    func staleTemporary() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/history.db-secrets.key"
        #expect(FileManager.default.createFile(atPath: path + ".\(getpid()).tmp", contents: Data()))
        let key = try SecretParamKey.readOrCreate(path)
        #expect(key.count == SecretParamKey.length)
        #expect(try SecretParamKey.readOrCreate(path) == key)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(left == ["history.db-secrets.key", "history.db-secrets.key.\(getpid()).tmp"], "no temporary file of its own is left")
    }

    @Test("a key file that others may read is refused, naming it and its mode; 0600 and 0400 are taken")
    func readableByOthers() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/history.db-secrets.key"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 1, count: 32), attributes: [.posixPermissions: 0o640]))
        #expect {
            _ = try SecretParamKey.readOrCreate(path)
        } throws: { error in
            "\(error)".contains(path) && "\(error)".contains("0640")
        }
        for mode in [0o600, 0o400] {
            chmod(path, mode_t(mode))
            #expect(try SecretParamKey.readOrCreate(path) == [UInt8](repeating: 1, count: 32))
        }
    }

    @Test("a key file another user owns, or that is no regular file, is refused naming it")
    func owner() {
        var status = stat()
        status.st_mode = S_IFREG | 0o600
        status.st_uid = geteuid()
        #expect(SecretParamKey.refusal(status, "/k") == nil)
        status.st_uid = geteuid() &+ 1
        #expect(SecretParamKey.refusal(status, "/k")?.contains("/k is owned by uid \(geteuid() &+ 1)") == true)
        status.st_uid = geteuid()
        status.st_mode = S_IFDIR | 0o700
        #expect(SecretParamKey.refusal(status, "/k")?.contains("not a regular file") == true)
    }
}
