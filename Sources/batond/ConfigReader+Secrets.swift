import BatonHooks
import FoundationEssentials
import Glibc

extension ConfigReader {
    /// The largest secret file read.
    static let maxSecretBytes = 4_096

    /// `{ file: "/etc/baton/hooks/x.secret" }` or `{ credential: "x" }` (systemd's
    /// `LoadCredential=`, read from `$CREDENTIALS_DIRECTORY`). Never a string in the config, and
    /// no message ever holds a secret's bytes: only where it was to be read from, and why not.
    mutating func secret(_ value: JSONValue, at path: String) -> Secret? {
        if case .string = value {
            fail(path, "a secret is never written in the config: give { file: \"/etc/baton/hooks/NAME.secret\" } or { credential: \"NAME\" }")
            return nil
        }
        guard let fields = object(value, at: path, allowed: ["file", "credential"]) else { return nil }
        let file: String
        let here: String
        switch (fields["file"], fields["credential"]) {
        case let (.some(value), nil):
            guard let text = self.path(value, at: path + ".file") else { return nil }
            (file, here) = (text, path + ".file")
        case let (nil, .some(value)):
            here = path + ".credential"
            guard let name = string(value, at: here) else { return nil }
            // The schedule generator runs before batond, without its credentials: it needs none.
            if !readsSecrets { return Secret(Array(repeating: 0, count: 16)) }
            guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
                fail(here, "a credential name is a file name in $CREDENTIALS_DIRECTORY (no \"/\"), got \(Self.show(value))")
                return nil
            }
            guard let directory = credentialsDirectory, !directory.isEmpty else {
                fail(here, "$CREDENTIALS_DIRECTORY is not set: run batond with LoadCredential=\(name):… in its unit, or give { file: … }")
                return nil
            }
            file = directory + "/" + name
        default:
            fail(path, "expected exactly one of { file: \"…\" } or { credential: \"…\" }")
            return nil
        }
        return readSecret(file, at: here)
    }

    private mutating func readSecret(_ file: String, at path: String) -> Secret? {
        if !readsSecrets { return Secret(Array(repeating: 0, count: 16)) }
        let fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            fail(path, "cannot read the secret file \(file): \(String(cString: strerror(errno)))")
            return nil
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            fail(path, "the secret file \(file) is not a regular file")
            return nil
        }
        guard info.st_size <= Self.maxSecretBytes else {
            fail(path, "the secret file \(file) is \(info.st_size) bytes; a secret is at most \(Self.maxSecretBytes)")
            return nil
        }
        var bytes = [UInt8](repeating: 0, count: Self.maxSecretBytes + 1)
        let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count >= 0 else {
            fail(path, "cannot read the secret file \(file): \(String(cString: strerror(errno)))")
            return nil
        }
        let secret = Secret(fileContent: Array(bytes[..<count]))
        guard secret.bytes.count >= 16 else {
            fail(path, "the secret in \(file) is \(secret.bytes.count) bytes; use at least 16 (openssl rand -hex 32 makes one)")
            return nil
        }
        if info.st_mode & 0o004 != 0 {
            warn(path, "the secret file \(file) is readable by every user: chmod o-r it")
        }
        return secret
    }
}
