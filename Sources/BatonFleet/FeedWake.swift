/// What the feed does with the notifications it read, as a value: `baton` (a key slot or a
/// phase changed) asks for a tick, as a fresh connection or the backstop timer do (no
/// notification: the tick is the point); `baton_output` (a host committed output of the runs
/// named) only wakes those runs' remote followers, unless the last tick is a second old, so that
/// a run's output streaming never delays nor replaces the once-a-second catch-up. `baton` with
/// the payload `stop` (a run was marked to stop) also asks the tick to read the stops.
struct FeedWake: Equatable {
    static let outputChannel = "baton_output"

    var tick: Bool
    var outputRuns: Set<Int64>
    /// A stop was marked (`StopRequest.announced`), or the connection is new: the tick reads the
    /// stops asked of this host's runs (it does anyway once a second).
    var stops: Bool
    /// Another host's feed greeted the fleet (`hello`): it listens (`FleetCompany`).
    var greeted = false

    /// The payload of `baton` a host's feed sends once it listens, naming its incarnation.
    static func hello(_ incarnation: String) -> String { "hello " + incarnation }

    /// `notes` nil: a connection just made (whatever was sent before it is caught up by a tick).
    /// `ownHello`: this host's greeting (`hello`), which is no news of company. `own`: this host's
    /// incarnation, the payload of its own commits' NOTIFY, which ask no tick: each was handed to
    /// its feed in-process (`OwnCommit`). `catchUpDue`: one of those own commits was left to a
    /// catch-up (`FleetFeed.askCatchUp`): a tick now, whatever the notifications, since its own
    /// NOTIFY asks for none and nothing else may come for a second.
    init(_ notes: [(channel: String, payload: String)]?, lastTickAge: Duration, ownHello: String = "", own: String? = nil,
         catchUpDue: Bool) {
        outputRuns = Set((notes ?? []).filter { $0.channel == Self.outputChannel }.compactMap { Int64($0.payload) })
        guard let notes else {
            tick = true
            stops = true
            return
        }
        greeted = notes.contains { $0.channel != Self.outputChannel && $0.payload.hasPrefix("hello ") && $0.payload != ownHello }
        stops = notes.contains { $0.channel != Self.outputChannel && $0.payload == StopRequest.announced }
        tick = catchUpDue || notes.isEmpty || notes.contains { $0.channel != Self.outputChannel && $0.payload != own }
            || lastTickAge >= .seconds(1)
    }

    init(tick: Bool, outputRuns: Set<Int64>, stops: Bool = false, greeted: Bool = false) {
        self.tick = tick
        self.outputRuns = outputRuns
        self.stops = stops
        self.greeted = greeted
    }
}
