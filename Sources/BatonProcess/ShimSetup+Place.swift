import Glibc

extension ShimSetup {
    /// The shims of a batond on `database` (an absolute path), their directories under the runtime
    /// directory systemd made for it (`$RUNTIME_DIRECTORY`: `/run/baton`, a tmpfs that
    /// `RuntimeDirectoryPreserve=yes` keeps across a stop and a restart, emptied by a reboot, as a
    /// shim's life is), named after the database so that two batonds of different databases never
    /// share one (`databaseName`); without one (a user's batond), beside the database
    /// (`DATABASE-shims`), as before, where a batond started under a runtime directory also looks
    /// for the shims an earlier version left there. `suffix` sets a fleet host's apart (`-HOST`).
    public static func place(executable: String, database: String, runtime: String?, suffix: String = "") -> ShimSetup {
        let beside = database + "-shims" + suffix
        // systemd gives several directories as a colon-separated list, in the unit's order.
        guard let runtime = runtime?.split(separator: ":").first.map(String.init), runtime.hasPrefix("/") else {
            return ShimSetup(executable: executable, directory: beside)
        }
        return ShimSetup(executable: executable, directory: runtime + "/" + databaseName(database) + suffix, earlierDirectories: [beside])
    }

    /// `shims` and the database's path escaped as `systemd-escape --path` does for the characters
    /// that matter here ("/" as "-", "-" and "\\" as `\x2d` and `\x5c`: one name a path, no two
    /// paths one name); a name too long for a directory is cut and ends with the path's FNV-1a hash.
    static func databaseName(_ database: String) -> String {
        var name = "shims-"
        for character in database.drop(while: { $0 == "/" }) {
            switch character {
            case "/": name += "-"
            case "-": name += "\\x2d"
            case "\\": name += "\\x5c"
            default: name.append(character)
            }
        }
        guard name.utf8.count > 200 else { return name }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in database.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(decoding: name.utf8.prefix(160), as: UTF8.self) + "-" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}
