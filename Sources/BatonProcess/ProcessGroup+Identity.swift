import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

extension ProcessGroup {
    /// The boot id of this machine, so that identities from before a reboot never match.
    public static let bootID: String = {
        (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?
            .trimmingWhitespace().description ?? "unknown-boot"
    }()

    /// The start time of a process in clock ticks since boot (field 22 of /proc/PID/stat).
    public static func startTime(of pid: Int32) -> UInt64? {
        let ticks = baton_proc_start_time(pid)
        return ticks == 0 ? nil : UInt64(ticks)
    }

    /// The process group id of a live process (field 5 of /proc/PID/stat); nil for a zombie.
    static func groupOf(_ pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 2, fields[0] != "Z", fields[0] != "X" else { return nil }
        return Int32(fields[2])
    }

    /// The identity of a live process: "BOOTID:STARTTIME".
    public static func identity(of pid: Int32) -> String {
        "\(bootID):\(startTime(of: pid) ?? 0)"
    }

    /// The pids still in this group that started no earlier than the recorded leader, on this boot.
    /// Empty when the identity is from another boot: the group cannot be ours then.
    public func survivors() -> [Int32] {
        let parts = identity.split(separator: ":")
        guard parts.count == 2, String(parts[0]) == Self.bootID, let leaderStart = UInt64(parts[1]),
              let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { Int32($0) }.filter { pid in
            Self.groupOf(pid) == pgid && (Self.startTime(of: pid) ?? 0) >= leaderStart
        }
    }
}

/// The processes of runs, found by the `BATON_INSTANCE` and `BATON_RUN_ID` their environment
/// carries (inherited by every descendant that does not clear its environment).
public enum TaggedProcesses {
    /// The pids of live processes tagged with `instance` and one of `runs` (any run when nil) but
    /// those of the runs `except` (runs a new batond adopts).
    public static func find(instance: String, runs: Set<Int64>?, except: Set<Int64> = []) -> [Int32] {
        guard runs?.isEmpty != true, let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        let me = getpid()
        let wanted = Array("BATON_INSTANCE=\(instance)".utf8)
        return entries.compactMap { Int32($0) }.filter { pid in
            guard pid != me, ProcessGroup.groupOf(pid) != nil,
                  let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return false }
            var instanceMatches = false
            var run: Int64?
            for variable in environ.split(separator: 0) {
                if variable.elementsEqual(wanted) { instanceMatches = true }
                else if variable.starts(with: Array("BATON_RUN_ID=".utf8)) {
                    run = Int64(String(decoding: variable.dropFirst(13), as: UTF8.self))
                }
            }
            return instanceMatches && run.map { !except.contains($0) && runs?.contains($0) ?? true } == true
        }
    }

    /// Kills the processes tagged with `instance` and one of `runs` (any run when nil), and the
    /// survivors of `groups`, in rounds until a look finds none: a process can fork between the
    /// look that found it and its kill (its child is found by the next look), and a killed process
    /// is listed until it has died, so this returns once they are gone. Gives up after `rounds`
    /// looks 5 ms apart (a process stuck in the kernel). Returns how many processes it killed.
    @discardableResult
    public static func killUntilGone(instance: String?, runs: Set<Int64>?, except: Set<Int64> = [], groups: [ProcessGroup] = [],
                                     rounds: Int = 400) -> Int {
        var killed = Set<Int32>()
        var round = 0
        while round < rounds {
            var found = instance.map { find(instance: $0, runs: runs, except: except) } ?? []
            for group in groups {
                let survivors = group.survivors()
                // Members that left the group with setpgid still carry our start-time mark: killed one by one.
                if !survivors.isEmpty { Glibc.kill(-group.pgid, SIGKILL) }
                found += survivors
            }
            if found.isEmpty { break }
            for pid in found { Glibc.kill(pid, SIGKILL) }
            killed.formUnion(found)
            usleep(5_000)
            round += 1
        }
        return killed.count
    }
}

