import BatonEngine

/// The id a request carries and its responses echo: a number or a string.
public enum RequestID: Codable, Sendable, Hashable {
    case number(Int64)
    case text(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) { self = .number(number); return }
        if let text = try? container.decode(String.self) { self = .text(text); return }
        throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected a string or an integer, got \(container.describedValue)")
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case let .number(number): try container.encode(number)
        case let .text(text): try container.encode(text)
        }
    }
}

/// What a request asks for.
public enum Operation: String, Codable, Sendable, CaseIterable {
    case ping, trigger, status, history, show, actions, cancel, wait, watch, reload, prune, stats, denied, metrics, output, search, pause, resume, events, artifacts, artifact, restart, approve, deny, approvals
}

/// One request line. Which fields matter depends on `op`; see docs/protocol.md.
///
/// A value, held as one reference to its fields, shared until changed: the read, the exchange
/// and the closures that answer it each carry the request, and a copy is a retain where its 23
/// fields inline were a `memcpy` and the retains of their strings (issue 39). The fields are never
/// written: a change makes a new storage.
public struct Request: Sendable {
    @usableFromInline var storage: Storage

    public init(id: RequestID? = nil, op: Operation, action: String? = nil, params: [String: String]? = nil,
                policy: Policy? = nil, detach: Bool? = nil, run: Int64? = nil, key: String? = nil, filter: HistoryFilter? = nil,
                dryRun: Bool? = nil, progress: Bool? = nil, force: Bool? = nil, from: Int64? = nil, follow: Bool? = nil,
                slot: Int64? = nil, text: String? = nil, reason: String? = nil, duration: Int64? = nil, name: String? = nil,
                actingAs: String? = nil, hold: Bool? = nil, asGroup: String? = nil, after: WatchCursor? = nil) {
        storage = Storage(Fields(
            id: id, op: op, action: action, params: params, policy: policy, detach: detach, force: force, slot: slot,
            dryRun: dryRun, run: run, key: key, filter: filter, after: after, progress: progress, from: from,
            follow: follow, text: text, reason: reason, duration: duration, hold: hold, name: name, actingAs: actingAs,
            asGroup: asGroup))
    }

    /// A request of these fields (one storage for a line read field by field).
    init(_ fields: Fields) { storage = Storage(fields) }

    /// The keys of its JSON: `as` is `actingAs`.
    typealias CodingKeys = Fields.CodingKeys
}

extension Request: Equatable {
    public static func == (lhs: Request, rhs: Request) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }
}

// Reflected as its fields, as the struct that held them was: `dump` and a failed `#expect` show them.
extension Request: CustomReflectable {
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: storage.fields).children, displayStyle: .struct)
    }
}

// Encoded as the fields are: the same keys, nil fields left out, as the synthesized conformance
// of the struct with these stored properties wrote it.
extension Request: Encodable {
    public func encode(to encoder: any Encoder) throws {
        try storage.fields.encode(to: encoder)
    }
}

extension Request: Decodable {
    /// Every field is optional but `op`; `run` says what came when it is not a whole number.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try container.decodeIfPresent(RequestID.self, forKey: .id),
                  op: try container.decode(Operation.self, forKey: .op),
                  action: try container.decodeIfPresent(String.self, forKey: .action),
                  params: try container.decodeIfPresent([String: String].self, forKey: .params),
                  policy: try container.decodeIfPresent(Policy.self, forKey: .policy),
                  detach: try container.decodeIfPresent(Bool.self, forKey: .detach),
                  run: try container.decodeWholeNumberIfPresent(Int64.self, forKey: .run, expected: "a whole number"),
                  key: try container.decodeIfPresent(String.self, forKey: .key),
                  filter: try container.decodeIfPresent(HistoryFilter.self, forKey: .filter),
                  dryRun: try container.decodeIfPresent(Bool.self, forKey: .dryRun),
                  progress: try container.decodeIfPresent(Bool.self, forKey: .progress),
                  force: try container.decodeIfPresent(Bool.self, forKey: .force),
                  from: try container.decodeWholeNumberIfPresent(Int64.self, forKey: .from, expected: "a whole number"),
                  follow: try container.decodeIfPresent(Bool.self, forKey: .follow),
                  slot: try container.decodeWholeNumberIfPresent(Int64.self, forKey: .slot, expected: "a whole number (microseconds since 1970)"),
                  text: try container.decodeIfPresent(String.self, forKey: .text),
                  reason: try container.decodeIfPresent(String.self, forKey: .reason),
                  duration: try container.decodeWholeNumberIfPresent(Int64.self, forKey: .duration, expected: "a whole number of microseconds"),
                  name: try container.decodeIfPresent(String.self, forKey: .name),
                  actingAs: try container.decodeIfPresent(String.self, forKey: .actingAs),
                  hold: try container.decodeIfPresent(Bool.self, forKey: .hold),
                  asGroup: try container.decodeIfPresent(String.self, forKey: .asGroup),
                  after: try container.decodeIfPresent(WatchCursor.self, forKey: .after))
    }
}
