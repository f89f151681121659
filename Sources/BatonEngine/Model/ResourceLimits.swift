/// What the kernel holds an action's attempts to (`limits: { memory: "512M", tasks: 200, cpu: "50%" }`):
/// written into each attempt's cgroup as `memory.max`, `pids.max` and `cpu.max`. Each is nil when
/// the action sets no such limit.
public struct ResourceLimits: Sendable, Equatable {
    /// The most memory the attempt's processes may hold together, in bytes.
    public var memory: Int64?
    /// The most processes and threads the attempt may have at once.
    public var tasks: Int?
    /// The CPU the attempt may use, in percent of one CPU (150: one and a half).
    public var cpu: Int?

    public init(memory: Int64? = nil, tasks: Int? = nil, cpu: Int? = nil) {
        self.memory = memory
        self.tasks = tasks
        self.cpu = cpu
    }

    /// One limit, named as in the config, with the cgroup v2 controller that enforces it.
    public enum Field: String, Sendable, CaseIterable {
        case memory, tasks, cpu

        public var controller: String {
            switch self {
            case .memory: "memory"
            case .tasks: "pids"
            case .cpu: "cpu"
            }
        }
    }

    /// The limits it sets, in the config's order.
    public var fields: [Field] {
        Field.allCases.filter { field in
            switch field {
            case .memory: memory != nil
            case .tasks: tasks != nil
            case .cpu: cpu != nil
            }
        }
    }

    public var isEmpty: Bool { fields.isEmpty }

    /// The period `cpu.max` is written with, in microseconds (the kernel's default).
    public static let cpuPeriod = 100_000

    /// `512M`, `2G`, `1.5G`, `800K`, `4096` (bytes): K, M, G and T are powers of 1024, as in
    /// systemd's MemoryMax=; `B` and `iB` may follow (`512MiB`). Nil when it is none of these, or
    /// less than one page.
    public static func bytes(_ text: String) -> Int64? {
        var digits = Substring(text.trimmingWhitespace())
        for suffix in ["iB", "B"] where digits.hasSuffix(suffix) {
            digits = digits.dropLast(suffix.count)
            break
        }
        let units: [Character: Double] = ["K": 1_024, "M": 1_048_576, "G": 1_073_741_824, "T": 1_099_511_627_776]
        var scale = 1.0
        if let last = digits.last?.uppercased().first, let unit = units[last] {
            scale = unit
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              let value = Double(digits), value.isFinite else { return nil }
        let total = value * scale
        guard total >= 4_096, total < 9.0e18 else { return nil }
        return Int64(total)
    }

    /// `50%`, `150%`: a whole percentage of one CPU, from 1 to 100,000. Nil otherwise.
    public static func percent(_ text: String) -> Int? {
        let trimmed = text.trimmingWhitespace()
        guard trimmed.hasSuffix("%"), let value = Int(trimmed.dropLast()), value >= 1, value <= 100_000 else { return nil }
        return value
    }
}
