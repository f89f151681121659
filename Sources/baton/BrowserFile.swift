import BatonCore
import BatonDashboard
import Dispatch
import FoundationEssentials
import Glibc

/// `baton dashboard --open`: a browser's argv is readable by every local user (`ps -eo args`), so
/// the browser is started on a file, not on the address: a page that sends it on to the address
/// with a fresh one-time code, in a directory only this user can enter. The file goes once its
/// code is used, once the code has expired, and when the dashboard stops.
enum BrowserFile {
    /// The file's directory and path, as C strings a signal handler may pass to rmdir and unlink.
    nonisolated(unsafe) static var directory: UnsafeMutablePointer<CChar>?
    nonisolated(unsafe) static var file: UnsafeMutablePointer<CChar>?
    nonisolated(unsafe) static var code: String?
    /// Where the file's state changes and the file is removed, one job at a time: no lock is held
    /// over an unlink, and a removal never frees a path another is still using.
    static let queue = DispatchQueue(label: "baton.browser-file")

    /// Writes the file with a new code and starts `$BROWSER` or `xdg-open` on it, without waiting.
    static func open(_ server: DashboardServer) {
        let code = server.issueCode()
        let target = server.address(code: code)
        let page = """
            <!doctype html>
            <meta charset="utf-8">
            <meta name="referrer" content="no-referrer">
            <meta http-equiv="refresh" content="0;url=\(target)">
            <title>Baton dashboard</title>
            <p><a href="\(target)">Open the Baton dashboard</a></p>\n
            """
        guard let path = write(page) else {
            DashboardCommand.say("cannot write a file for the browser (\(String(cString: strerror(errno)))); open the address above yourself\n", to: .error)
            return
        }
        queue.sync { Self.code = code }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Int(Sessions.codeLifetime.components.seconds))) { remove() }
        guard start("file://\(path)") else {
            remove()
            DashboardCommand.say("no browser to open here (set $BROWSER, or install xdg-utils); open the address above yourself\n", to: .error)
            return
        }
    }

    /// Removes the file once a page has used its code.
    static func used(_ code: String) {
        queue.async { if Self.code == code { removeNow() } }
    }

    /// `open.html` in a new `baton-dashboard-XXXXXX` directory (mode 0700) under
    /// `$XDG_RUNTIME_DIR` or the temporary directory; the file 0600, created, never reused.
    static func write(_ page: String) -> String? {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["TMPDIR"] ?? "/tmp"
        guard let made = strdup("\(base)/baton-dashboard-XXXXXX"), mkdtemp(made) != nil else { return nil }
        let path = String(cString: made) + "/open.html"
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { rmdir(made); free(made); return nil }
        let bytes = Array(page.utf8)
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        guard written == bytes.count else { unlink(path); rmdir(made); free(made); return nil }
        queue.sync {
            directory = made
            file = strdup(path)
        }
        return path
    }

    static func remove() {
        queue.async { removeNow() }
    }

    /// Removes the file and its directory (on `queue`). Their paths are not freed: a signal
    /// handler may be reading them (`removeAndExit`).
    private static func removeNow() {
        dispatchPrecondition(condition: .onQueue(queue))
        if let file { unlink(file) }
        if let directory { rmdir(directory) }
        file = nil
        directory = nil
        code = nil
    }

    /// For SIGINT and SIGTERM: only async-signal-safe calls, on the paths written before.
    static func removeAndExit() -> Never {
        if let file { unlink(file) }
        if let directory { rmdir(directory) }
        _exit(0)
    }

    /// Starts `$BROWSER URL` or `xdg-open URL`; false when there is neither.
    static func start(_ url: String) -> Bool {
        let environment = ProcessInfo.processInfo.environment
        let candidates = [environment["BROWSER"], "xdg-open"].compactMap { $0 }.filter { !$0.isEmpty }
        let path = (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for name in candidates {
            let found = name.contains("/") ? name : path.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
            guard let found, access(found, X_OK) == 0 else { continue }
            if ChildProcess.start(found, [url]) { return true }
        }
        return false
    }
}
