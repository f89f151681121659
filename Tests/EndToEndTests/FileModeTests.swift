import BatonCore
import Foundation
import Testing

@Suite("End to end: files", .offPool)
struct FileModeTests {
    @Test("the database, its WAL and the directory batond makes for it are not world-readable")
    func databaseModes() throws {
        let base = NSTemporaryDirectory() + "baton-modes-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: base) }
        let daemon = try Daemon(config: #"{ actions: { a: { exec: ["true"] } } }"#, database: base + "/state/history.sqlite")
        #expect(try daemon.baton("run", "a").code == 0)
        for path in [base + "/state", base + "/state/history.sqlite", base + "/state/history.sqlite-wal"] {
            let mode = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? 0o777
            #expect(mode & 0o007 == 0, "\(path) has mode \(String(mode, radix: 8))")
        }
    }
}
