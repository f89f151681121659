import BatonCore
import BatonHooks
import CBatonSystem
import Glibc

/// The key secret params' values are hashed under for their runs' keys: 32 random bytes that
/// batond creates once, mode 0600, beside the history it protects (`history.db` →
/// `history.db-secrets.key`), and reads at each start. A key text in the history
/// (`token=hmac:…`, the first 16 bytes of HMAC-SHA256 over the action, the param and the value)
/// says nothing of the value without the key, and two triggers meet in one key exactly when
/// their values are equal. Removing the file gives new keys from then on (runs in flight keep theirs).
final class SecretParamKey: Sendable {
    let path: String
    /// Whether batond makes the key when there is none (one machine); a fleet's hosts share one
    /// file the operator gives each (`secretsKey`), which none of them makes.
    let makes: Bool
    /// The key once loaded: set once (the first load stands), then read by any thread.
    private let key = OneShot<[UInt8]>()

    init(database: String, configured: String? = nil) {
        path = configured ?? database + "-secrets.key"
        makes = true
    }

    /// A fleet host's: the file `secretsKey` names, which must exist.
    init(shared path: String) {
        self.path = path
        makes = false
    }

    /// The sealer the conductor and the service make keys with: loads the key on first use
    /// when `prepare` did not (an action with a secret added by a reload).
    var sealer: SecretSealer {
        SecretSealer { [self] action, param, value throws(BatonError) in
            let key = try loaded()
            let message = Array(action.utf8) + [0] + Array(param.utf8) + [0] + Array(value.utf8)
            return "hmac:" + HMAC.hex(Array(HMAC.sha256(key: key, message: message).prefix(16)))
        }
    }

    /// At start: the key and libcrypto ready when some action has a secret param, so that a
    /// host that cannot have them says so now, not at a first trigger.
    func prepare(for actions: [Action]) throws {
        guard actions.contains(where: { !$0.secretParams.isEmpty }) else { return }
        do throws(BatonError) { _ = try loaded() } catch { throw DaemonError(error.message) }
    }

    private func loaded() throws(BatonError) -> [UInt8] {
        if let key = key.value { return key }
        do { try HMAC.load() } catch { throw .internalError("secret params: \(error.description)") }
        let read = try makes ? Self.readOrCreate(path) : Self.readShared(path)
        // Two first uses at once both read the file (made once, safely): the first to set it stands.
        key.set(read)
        return key.value ?? read
    }

    static let length = 32

    /// The key in `path`, made first if there is none: written to a file of its own (a unique
    /// name: neither a leftover of a crash nor another thread making it at once can be in the
    /// way), then linked into place and the directory synced, so that two batonds that start
    /// at once read the same complete key, and a crash does not lose the one kept.
    static func readOrCreate(_ path: String) throws(BatonError) -> [UInt8] {
        if let key = try read(path) { return key }
        // The system's generator is getrandom(2): cryptographically secure.
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<length).map { _ in UInt8.random(in: 0...UInt8.max, using: &generator) }
        var template = Array((path + ".XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { baton_mkstemp_cloexec($0.baseAddress!) }
        guard fd >= 0 else { throw failure("cannot create a file beside", path) }
        let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let written = write(fd, bytes, length)
        let synced = fsync(fd) == 0
        close(fd)
        defer { unlink(temporary) }
        guard written == length, synced else { throw failure("cannot write", temporary) }
        guard link(temporary, path) == 0 || errno == EEXIST else { throw failure("cannot create", path) }
        try syncDirectory(of: path)
        guard let key = try read(path) else { throw failure("cannot read", path) }
        return key
    }

    /// The fleet's shared key in `path`: refused when missing (each host would make its own).
    static func readShared(_ path: String) throws(BatonError) -> [UInt8] {
        guard let key = try read(path) else {
            throw .internalError("secret params: there is no key at \(path) (secretsKey): give every host of the fleet the same "
                + "file of 32 random bytes, mode 0600, owned by batond's user (head -c 32 /dev/urandom > \(path))")
        }
        return key
    }

    /// The directory's entry for a new file is on disk (fsync of the directory).
    private static func syncDirectory(of path: String) throws(BatonError) {
        let directory = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw failure("cannot open", directory) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw failure("cannot sync", directory) }
    }

    /// The key in `path`; nil when there is no file. A file others may read, or that another
    /// user owns, is refused: the key would be theirs too.
    private static func read(_ path: String) throws(BatonError) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw failure("cannot read", path)
        }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw failure("cannot read", path) }
        if let refused = refusal(status, path) { throw .internalError("secret params: \(refused)") }
        var bytes = [UInt8](repeating: 0, count: length + 1)
        let count = Glibc.read(fd, &bytes, bytes.count)
        guard count == length else {
            throw .internalError("secret params: \(path) holds \(max(count, 0)) bytes, not the \(length) of a key: "
                + "remove it to make a new one (keys of runs with secret params change)")
        }
        return Array(bytes.prefix(length))
    }

    /// Why a key file with `status` may not be used; nil when it may.
    static func refusal(_ status: stat, _ path: String) -> String? {
        let mode = status.st_mode & 0o7777
        if status.st_mode & S_IFMT != S_IFREG { return "\(path) is not a regular file" }
        if status.st_uid != geteuid() {
            return "\(path) is owned by uid \(status.st_uid), not batond's \(geteuid()): chown it, or remove it to make a new one"
        }
        if mode & 0o077 != 0 {
            return "\(path) may be read by others (mode 0\(String(mode, radix: 8))): chmod 600 it, "
                + "or remove it to make a new one (keys of runs with secret params change)"
        }
        return nil
    }

    private static func failure(_ what: String, _ path: String) -> BatonError {
        .internalError("secret params: \(what) \(path): \(String(cString: strerror(errno)))")
    }
}
