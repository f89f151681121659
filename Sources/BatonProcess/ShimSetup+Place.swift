import FoundationEssentials
import Glibc

extension ShimSetup {
    /// The runtime directory the packaged unit gives batond (`RuntimeDirectory=baton`).
    public static let packagedRuntime = "/run/baton"

    /// The shims of a batond on `database` (an absolute path; `host`: a fleet host's name).
    /// Each attempt's directory goes under a runtime directory (a tmpfs: no journal for its
    /// mkdir, status and rmdir): `$RUNTIME_DIRECTORY`'s first entry, else the packaged
    /// `/run/baton`, whichever is safe first (`isSafeRuntime`), as `shims-NAME` (`runtimeName`:
    /// the database's real path and the host, escaped together); the other safe one is looked at
    /// by recovery too, so that a batond started by hand finds what the service left and the
    /// other way round. The disk's place is beside the database as ever (`DATABASE-shims`,
    /// `DATABASE-shims-HOST`): the spool and a status written once batond is gone, and the whole
    /// attempt's directory where no runtime directory is safe (then as before this place existed),
    /// or where an earlier batond put it (an upgrade finds it there).
    public static func place(executable: String, database: String, host: String? = nil, runtime: String?,
                             packaged: String = packagedRuntime, isSafe: (String) -> Bool = isSafeRuntime) -> ShimSetup {
        let disk = database + "-shims" + (host.map { "-" + $0 } ?? "")
        // systemd gives several directories as a colon-separated list, in the unit's order.
        let given = runtime?.split(separator: ":").first.map(String.init).flatMap { $0.hasPrefix("/") ? $0 : nil }
        var candidates: [String] = []
        for candidate in [given, packaged].compactMap({ $0 }) {
            let trimmed = candidate.count > 1 && candidate.hasSuffix("/") ? String(candidate.dropLast()) : candidate
            if !candidates.contains(trimmed) { candidates.append(trimmed) }
        }
        let safe = candidates.filter(isSafe)
        guard let first = safe.first else { return ShimSetup(executable: executable, directory: disk) }
        let name = runtimeName(database: realPath(database), host: host)
        return ShimSetup(executable: executable, directory: first + "/" + name, disk: disk,
                         earlierDirectories: safe.dropFirst().map { $0 + "/" + name })
    }

    /// A runtime directory batond may keep its shims' directories in: a real directory (not a
    /// symlink), owned by batond's effective user, writable by no one else.
    public static func isSafeRuntime(_ path: String) -> Bool {
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        return info.st_mode & S_IFMT == S_IFDIR && info.st_uid == geteuid() && info.st_mode & 0o022 == 0
    }

    /// `database` with its directory's symlinks, `.`, `..` and repeated slashes resolved (the file
    /// itself may not exist yet); as given where the directory cannot be resolved.
    static func realPath(_ database: String) -> String {
        guard let slash = database.lastIndex(of: "/") else { return database }
        let directory = slash == database.startIndex ? "/" : String(database[..<slash])
        guard let resolved = realpath(directory, nil) else { return database }
        defer { free(resolved) }
        let real = String(cString: resolved)
        return (real == "/" ? "" : real) + "/" + database[database.index(after: slash)...]
    }

    /// `shims-` and the database's path escaped as `systemd-escape --path` writes it ("/" as "-",
    /// every byte but `[A-Za-z0-9_.]` as `\xNN`, a leading "." too), then a fleet host's name as
    /// `@HOST`, escaped the same way: "@" appears nowhere else, so no two (database, host) pairs
    /// share a name. A name too long for a directory is cut and ends with `+` and the whole
    /// name's FNV-1a hash ("+" appears nowhere else either).
    static func runtimeName(database: String, host: String?) -> String {
        var name = "shims-" + escaped(database.split(separator: "/").map(String.init), separator: "-")
        if let host { name += "@" + escaped([host], separator: "") }
        guard name.utf8.count > 200 else { return name }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(decoding: name.utf8.prefix(160), as: UTF8.self) + "+" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    private static func escaped(_ parts: [String], separator: String) -> String {
        var text = ""
        for (index, part) in parts.enumerated() {
            if index > 0 { text += separator }
            for (offset, byte) in part.utf8.enumerated() {
                let plain = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                    || byte == 0x5f || (byte == 0x2e && !(index == 0 && offset == 0))
                if plain { text.append(Character(Unicode.Scalar(byte))) } else {
                    text += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
                }
            }
        }
        return text
    }
}
