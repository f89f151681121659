import BatonCore
import FoundationEssentials

/// The schedules of the config batond last applied, kept in its state directory
/// (`$STATE_DIRECTORY/schedule-units.json`, /var/lib/baton under batond.service) at start and at
/// each reload it applied. The generator reads it back when the config on disk has errors, so that
/// a broken edit keeps the last good timers rather than none. It holds what the timers are made of,
/// not their text: the generator writes the units itself, from names and expressions it checks.
struct ScheduleRecord: Codable, Equatable {
    /// One scheduled action.
    struct Entry: Codable, Equatable {
        var action: String
        var schedules: [String]
        /// `scheduleJitter`, in microseconds.
        var jitter: Int64?
        var catchUp: Bool
    }

    static let fileName = "schedule-units.json"
    /// Where the generator looks for the record (`$BATON_STATE_DIRECTORY` overrides it).
    static let defaultDirectory = "/var/lib/baton"

    /// The config file the schedules came from.
    var config: String
    var socket: String?
    var entries: [Entry]

    init(_ config: Config, path: String) {
        self.config = path
        socket = config.socket
        entries = config.actions.filter { !$0.schedules.isEmpty }.map {
            Entry(action: $0.name, schedules: $0.schedules, jitter: $0.scheduleJitter?.microseconds, catchUp: $0.catchUp)
        }
    }

    /// The actions the entries stand for, as far as their timers go; an entry whose name or
    /// expression could break out of its unit file (a character other than an action name's, a
    /// line break) is left out.
    var actions: [Action] {
        entries.compactMap { entry in
            guard Self.safeName(entry.action), !entry.schedules.contains(where: { $0.contains { $0.isNewline } }) else { return nil }
            var action = Action(name: entry.action)
            action.schedules = entry.schedules
            action.scheduleJitter = entry.jitter.map { .microseconds($0) }
            action.catchUp = entry.catchUp
            return action
        }
    }

    static func safeName(_ name: String) -> Bool {
        !name.isEmpty && name.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "-" || $0 == "_" || $0 == "." }
    }

    /// Writes the record into `directory` (replacing the file whole).
    func write(into directory: String) throws {
        let data = try JSONEncoder().encode(self)
        try data.write(to: URL(fileURLWithPath: directory + "/" + Self.fileName), options: .atomic)
    }

    /// The record in `directory`; nil when there is none or it cannot be read.
    static func read(from directory: String) -> ScheduleRecord? {
        guard let data = FileManager.default.contents(atPath: directory + "/" + fileName) else { return nil }
        return try? JSONDecoder().decode(ScheduleRecord.self, from: data)
    }

    /// batond keeps the record of `config` where systemd gave it a state directory
    /// (`$STATE_DIRECTORY`, its first path); elsewhere no generator reads it, and nothing is written.
    static func keep(_ config: Config, path: String, environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let directory = environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init), !directory.isEmpty else { return }
        do {
            try ScheduleRecord(config, path: path).write(into: directory)
        } catch {
            Log.warning("cannot keep the schedules in \(directory)/\(fileName) for the generator: \(error)")
        }
    }
}
