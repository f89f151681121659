import BatonCore
import BatonIPC

/// Which authenticated deliveries press a hook's action. One that does not is ignored: answered
/// 202 with the reason, counted, and no run — never an error, which a forge would show as a
/// failed delivery. The same rules serve one host and a fleet: they are decided before the press.
public struct HookRules: Sendable, Equatable {
    /// The events taken, spelled by `DeliveryEvent.name`; nil: every request, naming an event or not.
    public var events: Set<String>?
    /// Conditions on the body, all of which must hold.
    public var when: [Condition]
    /// The action's patterns of the params the hook fills: a value that does not match is
    /// ignored rather than refused (a push to a branch the action does not deploy).
    public var patterns: [String: ParamPattern]

    /// The value at `pointer` is one of `values`, compared as a param's text (`42`, `true`).
    public struct Condition: Sendable, Equatable {
        /// Where in the body.
        public var pointer: JSONPointer
        /// The texts taken there, any one of them.
        public var values: [String]
        /// The condition that the value at `pointer` is one of `values`.
        public init(_ pointer: JSONPointer, _ values: [String]) {
            self.pointer = pointer
            self.values = values
        }
    }

    /// Why a delivery was ignored: a word for the metrics' label, and a sentence for its sender.
    public struct Ignored: Sendable, Equatable {
        /// Which rule passed it over.
        public var reason: Reason
        /// What was wrong with it, for its sender and the log: the event, the pointer or the param.
        public var message: String
    }

    /// What passed a delivery over: a few words, so a metric's series stay few.
    public enum Reason: String, Sendable, CaseIterable {
        /// The event is not one the hook takes.
        case event
        /// The body fails a condition of `when`.
        case when
        /// A param's value fails its action's pattern.
        case param
    }

    /// Rules from their parts; `events` nil takes every request.
    public init(events: Set<String>?, when: [Condition] = [], patterns: [String: ParamPattern] = [:]) {
        self.events = events
        self.when = when
        self.patterns = patterns
    }

    /// The rules a hook of `scheme` has when its config says none: `DeliveryEvent.defaults`.
    public init(for scheme: SignatureScheme) {
        self.init(events: DeliveryEvent.defaults(scheme))
    }

    /// Why `event`, named by a request of `scheme`, is not taken; nil when it is.
    public func ignoring(_ event: DeliveryEvent.Named, _ scheme: SignatureScheme) -> Ignored? {
        guard let events else { return nil }
        let field = DeliveryEvent.header(scheme)
        let taken = events.sorted().joined(separator: ", ")
        switch event {
        case let .event(name):
            return events.contains(name) ? nil : Ignored(reason: .event, message: "event \(name) is not one this hook takes (\(taken))")
        case .none:
            return Ignored(reason: .event, message: "no \(field) names the event; this hook takes \(taken)")
        case .unreadable:
            return Ignored(reason: .event, message: "\(field) is not one event name; this hook takes \(taken)")
        }
    }

    /// The first condition the body does not meet; nil when it meets them all.
    public func ignoring(_ payload: Payload) -> Ignored? {
        for condition in when {
            let shown = condition.values.map(Self.quoted).joined(separator: " or ")
            guard let value = condition.pointer.resolve(in: payload) else {
                return Ignored(reason: .when, message: "\(condition.pointer) is absent, not \(shown)")
            }
            guard let text = value.paramText else {
                return Ignored(reason: .when, message: "\(condition.pointer) is not a string, number or boolean, not \(shown)")
            }
            if !condition.values.contains(text) {
                return Ignored(reason: .when, message: "\(condition.pointer) is \(Self.quoted(text)), not \(shown)")
            }
        }
        return nil
    }

    /// The first param, by name, whose value the action's pattern refuses; nil when none is.
    /// A value that can be no param (too long, a line break, a NUL) is left to the action's
    /// check, which refuses it (400) as it would from any trigger.
    public func ignoring(params: [String: String]) -> Ignored? {
        for (name, value) in params.sorted(by: { $0.key < $1.key }) {
            guard let pattern = patterns[name], value.utf8.count <= Action.maxValueLength,
                  !value.unicodeScalars.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\0" }), !pattern.matches(value) else { continue }
            return Ignored(reason: .param, message: "param \(name): \(Self.quoted(value)) does not match \(pattern)")
        }
        return nil
    }

    /// A value from the body as a message shows it: a JSON string of its first 80 characters,
    /// control characters escaped, so that the log line it goes to stays one line.
    static func quoted(_ value: String) -> String {
        var bytes: [UInt8] = []
        JSONWriter.appendString(String(value.prefix(80)), to: &bytes)
        return String(decoding: bytes, as: UTF8.self) + (value.count > 80 ? "…" : "")
    }
}

extension HookRules {
    /// The answer to a ping: 200 `{"pong": true, "hook": NAME, "events": [...]}`, the events this
    /// hook takes (`["*"]`: every one), so a forge's test delivery shows what the hook will do.
    public func pong(hook: String) -> HTTPResponse {
        var json = JSONWriter()
        json.beginObject()
        json.field("pong", true)
        json.field("hook", hook)
        json.key("events")
        json.strings(events.map { $0.sorted() } ?? [DeliveryEvent.any])
        json.endObject()
        var body = json.take()
        body.append(10)
        return HTTPResponse(status: 200, contentType: "application/json", body: body)
    }
}

extension HookRules.Ignored {
    /// The answer: 202 `{"ignored": true, "reason": "event", "message": "…"}`; accepted, since the
    /// delivery was well made and authentic, and no run.
    public var response: HTTPResponse {
        var json = JSONWriter()
        json.beginObject()
        json.field("ignored", true)
        json.field("reason", reason.rawValue)
        json.field("message", message)
        json.endObject()
        var body = json.take()
        body.append(10)
        return HTTPResponse(status: 202, contentType: "application/json", body: body)
    }
}
