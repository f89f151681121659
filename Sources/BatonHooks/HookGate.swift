import BatonCore
import BatonIPC

/// Decides every webhook request, pure: from the hook table, the request's head (and then its
/// body) and the time, an answer or a trigger. In order:
///
/// 1. The head alone (`route`): a known hook's path (404), its one method (405), a body with a
///    Content-Length within `bodyLimit` (411, 413). Nothing is read before this passes.
/// 2. With the body (`decide`): the hook's signature over it (401, the same answer whatever
///    failed: an unsigned sender learns nothing of the rules), then the delivery id and `?wait=`
///    (400, which may say what is wrong: the sender has proven it holds the secret).
/// 3. The hook's rules (`HookRules`): a `ping` is answered `pong` (200); an event the hook does
///    not take, a body that fails its `when`, or a param its action's pattern refuses is ignored
///    (202, the reason named). Only then the params by JSON Pointer (400 for a value that is no
///    param, or a body that is no JSON) and the trigger. None of these makes a run, on one host
///    or in a fleet: the press comes after.
public struct HookGate: Sendable {
    public var hooks: [String: Hook]
    public var bodyLimit: Int
    /// The longest `?wait=` honoured.
    public var maxWait: Duration

    /// What a request is for, once its head has passed.
    public enum Route: Sendable, Equatable {
        /// `POST /hooks/NAME`
        case trigger(Hook)
        /// `GET /hooks/NAME/runs/N`
        case status(Hook, run: Int64)
    }

    /// What to do after the head.
    public enum Head: Sendable, Equatable {
        /// Read `bodyLength` bytes of body, then `decide`.
        case read(Route, bodyLength: Int)
        case answer(HookAnswer)
    }

    /// What to do with the whole request.
    public enum Decision: Sendable, Equatable {
        case trigger(HookTrigger)
        /// Read run `run` of hook `hook`, if it is that hook's.
        case status(hook: String, action: String, run: Int64)
        case answer(HookAnswer)
        /// A ping: answer `HookRules.pong`, no run.
        case pong(hook: String)
        /// An authenticated delivery the hook's rules pass over: answer 202, no run.
        case ignored(hook: String, HookRules.Ignored)
    }

    /// The longest delivery id taken.
    public static let maxDeliveryLength = 200
    /// The fields that carry a delivery id, in the order they are looked at.
    public static let deliveryFields = ["x-github-delivery", "x-gitea-delivery", "x-gitlab-event-uuid", "idempotency-key"]

    public init(hooks: [String: Hook], bodyLimit: Int = 256 << 10, maxWait: Duration = .seconds(600)) {
        self.hooks = hooks
        self.bodyLimit = bodyLimit
        self.maxWait = maxWait
    }

    /// The first step: the head alone.
    public func route(_ head: HTTPRequestHead) -> Head {
        let segments = head.path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count >= 3, segments[0].isEmpty, segments[1] == "hooks", let hook = hooks[String(segments[2])] else {
            return .answer(.notFound)
        }
        switch segments.count {
        case 3:
            guard head.method == "POST" else { return .answer(.methodNotAllowed("POST")) }
            if head.field("transfer-encoding") != nil { return .answer(.lengthRequired) }
            guard let text = head.field("content-length") else { return .answer(.lengthRequired) }
            // The parser has made sure it is digits; digits past any Int are past the limit too.
            guard let length = Int(text), length <= bodyLimit else { return .answer(.tooLarge) }
            return .read(.trigger(hook), bodyLength: length)
        case 5 where segments[3] == "runs":
            guard let run = Self.runID(segments[4]) else { return .answer(.notFound) }
            guard head.method == "GET" else { return .answer(.methodNotAllowed("GET")) }
            // A status read has no body; one announced is not read.
            if let text = head.field("content-length"), text != "0" { return .answer(.tooLarge) }
            if head.field("transfer-encoding") != nil { return .answer(.lengthRequired) }
            return .read(.status(hook, run: run), bodyLength: 0)
        default:
            return .answer(.notFound)
        }
    }

    /// The second step: the body has come. `now` is Unix time in seconds.
    public func decide(_ route: Route, _ head: HTTPRequestHead, body: [UInt8], now: Int64) -> Decision {
        switch route {
        case let .status(hook, run):
            let token = Self.bearer(head).map { HMAC.equal(Array($0.utf8), Array(hook.statusToken(run: run).utf8)) } ?? false
            guard token || hook.signature.verify(head, body: body, secret: hook.secret, now: now) else { return .answer(.unauthorized) }
            return .status(hook: hook.name, action: hook.action, run: run)
        case let .trigger(hook):
            guard hook.signature.verify(head, body: body, secret: hook.secret, now: now) else { return .answer(.unauthorized) }
            return trigger(hook, head, body)
        }
    }

    /// What forges send (UUIDs, hex) and what may be shown as is: visible ASCII with no space, so
    /// that two ids never fold into one (invalid UTF-8 would decode to U+FFFD) and an id shown in a
    /// run's `via` cannot pass for other text.
    static func isDeliveryID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maxDeliveryLength && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }

    /// An authenticated trigger's delivery id and wait, its hook's rules, then its params.
    private func trigger(_ hook: Hook, _ head: HTTPRequestHead, _ body: [UInt8]) -> Decision {
        let delivery = Self.deliveryFields.lazy.compactMap { head.field($0) }.first
        if let delivery, !Self.isDeliveryID(delivery) {
            return .answer(HookAnswer(status: 400, message: "a delivery id is 1 to \(Self.maxDeliveryLength) visible ASCII characters, no spaces"))
        }
        var wait: Duration?
        switch Self.wait(in: head.query) {
        case .failure(let problem): return .answer(HookAnswer(status: 400, message: problem.message))
        case .success(let given): wait = given.map { min($0, maxWait) }
        }
        let event = DeliveryEvent.of(head, hook.signature)
        if event == .event(DeliveryEvent.ping) { return .pong(hook: hook.name) }
        if let ignored = hook.rules.ignoring(event, hook.signature) { return .ignored(hook: hook.name, ignored) }
        var params: [String: String] = [:]
        if !hook.params.isEmpty || !hook.rules.when.isEmpty {
            guard let payload = Payload.read(body) else { return .answer(HookAnswer(status: 400, message: "the body is not JSON")) }
            if let ignored = hook.rules.ignoring(payload) { return .ignored(hook: hook.name, ignored) }
            if let refusal = Self.take(hook, payload, into: &params) { return .answer(refusal) }
            if let ignored = hook.rules.ignoring(params: params) { return .ignored(hook: hook.name, ignored) }
        }
        return .trigger(HookTrigger(hook: hook.name, action: hook.action, params: params, delivery: delivery, wait: wait))
    }

    /// Takes the hook's params from the body, each by its pointer; a 400 for a value that is none.
    static func take(_ hook: Hook, _ payload: Payload, into params: inout [String: String]) -> HookAnswer? {
        for (name, pointer) in hook.params.sorted(by: { $0.key < $1.key }) {
            // A value the payload lacks is left out: the action's default, or its "required" error.
            guard let value = pointer.resolve(in: payload) else { continue }
            guard let text = value.paramText else {
                return HookAnswer(status: 400, message: "param \(name): \(pointer) is not a string, number or boolean")
            }
            params[name] = text
        }
        return nil
    }

    /// Why a query is not taken.
    struct QueryProblem: Error { var message: String }

    /// `wait=DURATION` (`30s`, `2m`) from the query, where it is given; any other key is refused.
    static func wait(in query: String?) -> Result<Duration?, QueryProblem> {
        guard let query, !query.isEmpty else { return .success(nil) }
        var wait: Duration?
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == "wait", wait == nil else {
                return .failure(QueryProblem(message: "the only query is wait=DURATION (as 30s), once"))
            }
            guard parts[1].utf8.count <= 16, let duration = DurationText.parse(String(parts[1])), duration >= .zero else {
                return .failure(QueryProblem(message: "wait takes a duration, as 30s or 2m"))
            }
            wait = duration
        }
        return .success(wait)
    }

    static func runID(_ text: Substring) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), text.first != "0" else { return nil }
        return Int64(text)
    }

    /// The token of the one `Authorization: Bearer …` field.
    static func bearer(_ head: HTTPRequestHead) -> String? {
        guard let value = head.only("authorization"), value.count > 7, value.prefix(7).lowercased() == "bearer " else { return nil }
        return String(value.dropFirst(7))
    }
}
