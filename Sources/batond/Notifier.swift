import CBatonSystem
import FoundationEssentials
import Glibc

/// Tells systemd how batond is doing, with the `sd_notify` datagram protocol (see `man sd_notify`):
/// `READY=1`, `STATUS=…`, `RELOADING=1` with `MONOTONIC_USEC`, `STOPPING=1` and `WATCHDOG=1`.
/// Does nothing when `NOTIFY_SOCKET` is unset (not started by systemd with `Type=notify`).
final class Notifier: Sendable {
    let socket: String?
    /// Half of `WATCHDOG_USEC` when the watchdog is on for this process: how often to ping.
    let watchdogInterval: Duration?
    /// `WATCHDOG_USEC` as given, for a restart in place to give it back (`Reexec`).
    let watchdogMicroseconds: Int64?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socket = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        let forUs = environment["WATCHDOG_PID"].flatMap(Int32.init).map { $0 == getpid() } ?? true
        if forUs, let usec = environment["WATCHDOG_USEC"].flatMap(Int64.init), usec > 0 {
            watchdogInterval = .microseconds(usec / 2)
            watchdogMicroseconds = usec
        } else {
            watchdogInterval = nil
            watchdogMicroseconds = nil
        }
        // Actions must not inherit them.
        for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { unsetenv(name) }
    }

    /// Sends `KEY=value` lines in one datagram; false if it could not be sent.
    @discardableResult
    func send(_ fields: [String]) -> Bool {
        guard let socket else { return false }
        let message = fields.joined(separator: "\n")
        return message.withCString { baton_unix_sendto(socket, $0, strlen($0)) } == 0
    }

    func ready(status: String) { send(["READY=1", "STATUS=" + status]) }
    func status(_ text: String) { send(["STATUS=" + text]) }
    func reloading(_ status: String = "reloading the config") {
        send(["RELOADING=1", "MONOTONIC_USEC=\(Self.monotonicMicroseconds())", "STATUS=" + status])
    }
    func stopping() { send(["STOPPING=1", "STATUS=stopping: waiting for runs in flight"]) }
    func watchdog() { send(["WATCHDOG=1"]) }

    /// CLOCK_MONOTONIC in microseconds, as systemd wants with RELOADING=1.
    static func monotonicMicroseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_nsec) / 1_000
    }

    /// "3 loading, 1 queued" — what batond tells systemd it is doing.
    static func describe(loading: Int, queued: Int) -> String {
        if loading == 0 && queued == 0 { return "idle" }
        return "\(loading) loading, \(queued) queued"
    }
}
