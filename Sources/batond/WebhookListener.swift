import BatonCore
import BatonHooks
import BatonIPC
import BatonService
import FoundationEssentials

/// `POST /hooks/NAME` and `GET /hooks/NAME/runs/N` on the small HTTP server: every decision is
/// `HookGate`'s; this performs them — reads the body the gate asked for, presses through the
/// service, keeps delivery ids single-flight (`DeliveryTable`, then the history), and answers.
/// A delivery is recorded by the store with the run it makes, in the same write; in a fleet, the
/// transaction that makes it finds one another host recorded first (`BatonError.delivered`).
/// Its tables (rate limits, deliveries in flight, `?wait=`s) are the loop's: no lock; what comes
/// from another thread (a press's answer, a history read) is handed to the loop first.
final class WebhookListener: Sendable {
    /// Where delivery ids recorded before (before a restart, or by another host) are looked up.
    struct DeliveryStore: Sendable {
        var find: @Sendable (_ delivery: String, _ hook: String) async throws(BatonError) -> Int64?
    }

    /// Called with the run a delivery made, or nil when it made none.
    typealias Waiter = @Sendable (Int64?) -> Void

    let service: Service
    let webhooks: @Sendable () -> WebhookConfig?
    let store: DeliveryStore?
    let reactor: Reactor
    private let limiter: LoopOwned<RateLimiter>
    private let deliveries: LoopOwned<DeliveryTable<Waiter>>
    /// The `?wait=`s not yet over, by number: one leaves when it is answered, runs out, or its client goes.
    private let waits: LoopOwned<(next: Int, open: [Int: WebhookWait])>
    /// Told the number of open waits each time it changes (on the loop): for tests.
    private let waitsChanged: @Sendable (Int) -> Void
    private let origin = ContinuousClock.now

    init(service: Service, store: DeliveryStore?, reactor: Reactor, waitsChanged: @escaping @Sendable (Int) -> Void = { _ in },
         webhooks: @escaping @Sendable () -> WebhookConfig?) {
        self.service = service
        self.store = store
        self.webhooks = webhooks
        self.reactor = reactor
        self.waitsChanged = waitsChanged
        limiter = LoopOwned(RateLimiter(), on: reactor)
        deliveries = LoopOwned(DeliveryTable(), on: reactor)
        waits = LoopOwned((1, [:]), on: reactor)
    }

    /// The `?wait=`s open now (on the loop).
    var openWaits: Int { waits.access { $0.open.count } }

    /// The server's handler: decides on the head, then on the body.
    func handle(_ head: HTTPRequestHead, _ exchange: HTTPExchange) {
        guard let config = webhooks() else { return answer(.notFound, hook: "", exchange) }
        let gate = config.gate
        switch gate.route(head) {
        case let .answer(refusal):
            answer(refusal, hook: Self.hookName(head.path, in: config), exchange)
        case let .read(route, length):
            exchange.readBody(count: length) { [self] body in
                let address = ClientAddress.of(peer: exchange.peerAddress, forwardedFor: head.fields.filter { $0.name == "x-forwarded-for" }.map(\.value),
                                               trusted: config.trustedProxies, peerTrusted: exchange.peerUID.map(config.proxyUsers.contains) ?? false)
                switch gate.decide(route, head, body: body, now: Int64(Date().timeIntervalSince1970)) {
                case let .answer(refusal): answer(refusal, hook: Self.hookName(head.path, in: config), exchange)
                case let .status(hook, action, run): status(hook, action: action, run: run, exchange)
                case let .pong(hook): pong(hook, config, head, from: address, exchange)
                case let .ignored(hook, ignored): ignore(hook, ignored, head, from: address, exchange)
                case let .trigger(trigger):
                    // Counted once authenticated: an outsider who knows a hook's name cannot use up its budget.
                    let hook = config.hooks[trigger.hook]
                    if let hook, let retry = limiter.access({ $0.admit(hook.name, hook.rateLimit, now: ContinuousClock.now - origin) }) {
                        return answer(HookAnswer(status: 429, message: "too many requests", retryAfter: retry), hook: hook.name, exchange)
                    }
                    press(trigger, from: address, hook, exchange)
                }
            }
        }
    }

    /// The hook a path names, for the metrics' label: never a name no hook has.
    static func hookName(_ path: String, in config: WebhookConfig) -> String {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count >= 3, segments[1] == "hooks", config.hooks[String(segments[2])] != nil else { return "" }
        return String(segments[2])
    }

    // MARK: Pressing

    private func press(_ trigger: HookTrigger, from address: String, _ hook: Hook?, _ exchange: HTTPExchange) {
        guard let hook else { return answer(.notFound, hook: "", exchange) }
        if let wait = trigger.wait { exchange.extendDeadline(by: wait + .seconds(5)) }
        let via = "webhook \(hook.name) from \(address)" + (trigger.delivery.map { ", delivery \($0)" } ?? "")
        guard let id = trigger.delivery else { return start(trigger, hook, via: via, delivery: nil, exchange) { _ in } }
        let delivery = Delivery(hook: hook.name, id: id, address: address)
        let key = DeliveryTable<Waiter>.key(hook: hook.name, delivery: id)
        // The first made no run (refused, busy): each waiter tries again, one at a time through the table.
        let waiter: Waiter = { [self] run in
            if let run { replay(run, trigger, hook, exchange) } else { press(trigger, from: address, hook, exchange) }
        }
        switch deliveries.access({ $0.begin(key, waiter) }) {
        case .waiting: return
        case let .known(run): return replay(run, trigger, hook, exchange)
        case .first: break
        }
        guard let store else { return first(trigger, hook, via: via, delivery, key, stored: .success(nil), exchange) }
        service.reads.read({ () async throws(BatonError) -> Int64? in try await store.find(id, hook.name) }) { [self] stored in
            first(trigger, hook, via: via, delivery, key, stored: stored, exchange)
        }
    }

    /// The first of a delivery id, with what the history says of it (on the loop).
    private func first(_ trigger: HookTrigger, _ hook: Hook, via: String, _ delivery: Delivery, _ key: String,
                       stored: Result<Int64?, BatonError>, _ exchange: HTTPExchange) {
        switch stored {
        case .failure:
            // Not knowing whether the delivery ran is no reason to run it twice: refuse it now.
            for waiter in deliveries.access({ $0.finish(key, run: nil) }) { waiter(nil) }
            answer(HookAnswer(status: 503, message: "the history cannot be read: try again"), hook: hook.name, exchange)
        case let .success(stored?):
            for waiter in deliveries.access({ $0.finish(key, run: stored) }) { waiter(stored) }
            replay(stored, trigger, hook, exchange)
        case .success(nil):
            start(trigger, hook, via: via, delivery: delivery, exchange) { [self] run in
                for waiter in deliveries.access({ $0.finish(key, run: run) }) { waiter(run) }
            }
        }
    }

    /// Presses the hook's action; `made` gets the run the press made or joined, or the one its
    /// delivery made before (nil: none).
    private func start(_ trigger: HookTrigger, _ hook: Hook, via: String, delivery: Delivery?, _ exchange: HTTPExchange,
                       made: @escaping @Sendable (Int64?) -> Void) {
        let wait = trigger.wait.map { _ in openWait(exchange) { [self] run, ended in
            answer(run, hook, decision: nil, replayed: false, code: ended ? Self.outcomeCode(run) : 202, exchange)
        } }
        service.press(hook.action, params: trigger.params, via: via, delivery: delivery, follower: wait?.follower) { [self] result in
            reactor.onLoop { [self] in pressed(result, trigger, hook, wait, exchange, made: made) }
        }
    }

    /// The press's answer (on the loop).
    private func pressed(_ result: Result<(TriggerDecision, RunSnapshot), BatonError>, _ trigger: HookTrigger, _ hook: Hook,
                         _ wait: WebhookWait?, _ exchange: HTTPExchange, made: @Sendable (Int64?) -> Void) {
        switch result {
        case let .failure(.delivered(run, _, _)):
            // Another host took the delivery first (its record was in the fleet's history).
            made(run)
            wait?.cancel()
            replay(run, trigger, hook, exchange)
        case let .failure(error):
            made(nil)
            wait?.cancel()
            answer(Self.refusal(error), hook: hook.name, exchange)
        case let .success((decision, run)):
            made(run.id)
            guard let wait, let duration = trigger.wait else {
                return answer(run, hook, decision: decision, replayed: false, code: 202, exchange)
            }
            wait.answered(run)
            wait.timeOut(after: duration)
        }
    }

    /// A delivery seen before: its run, waited for like a new one when `?wait=` asks.
    private func replay(_ id: Int64, _ trigger: HookTrigger, _ hook: Hook, _ exchange: HTTPExchange) {
        guard let duration = trigger.wait else { return answerFromHistory(id, hook, exchange, code: nil) }
        let wait = openWait(exchange) { [self] run, ended in
            answer(run, hook, decision: nil, replayed: true, code: ended ? Self.outcomeCode(run) : 202, exchange)
        }
        service.follow(run: id, follower: wait.follower) { [self] live in
            reactor.onLoop { [self] in
                guard let live else {
                    wait.cancel()
                    return answerFromHistory(id, hook, exchange, code: .outcome)
                }
                wait.answered(live)
                wait.timeOut(after: duration)
            }
        }
    }

    /// A stop's quiesce: each `?wait=` open is answered now with its run as it is (202 for one
    /// still queued or handed over: the next batond ends it), not held to the quiesce's bound.
    func endWaits() {
        reactor.onLoop { [self] in
            for wait in waits.access({ Array($0.open.values) }) { wait.timedOut() }
        }
    }

    /// A `?wait=` of this exchange, in the table until it is over; dropped when the client goes.
    private func openWait(_ exchange: HTTPExchange, finish: @escaping @Sendable (RunSnapshot, Bool) -> Void) -> WebhookWait {
        let number = waits.access { waits in defer { waits.next += 1 }; return waits.next }
        let wait = WebhookWait(reactor: reactor, finish: finish) { [self] in
            let count = waits.access { waits in
                waits.open[number] = nil
                return waits.open.count
            }
            waitsChanged(count)
        }
        let count = waits.access { waits in
            waits.open[number] = wait
            return waits.open.count
        }
        waitsChanged(count)
        exchange.onClose { [reactor] in reactor.onLoop { wait.cancel() } }
        return wait
    }

    enum Code { case outcome }

    private func answerFromHistory(_ id: Int64, _ hook: Hook, _ exchange: HTTPExchange, code: Code?) {
        service.reads.read({ [service] () async throws(BatonError) -> RunSnapshot? in try await service.lookUp(run: id) }) { [self] result in
            switch result {
            case let .success(run?):
                let status = code == .outcome && run.phase.isTerminal ? Self.outcomeCode(run) : 202
                answer(run, hook, decision: nil, replayed: true, code: status, exchange)
            case .success(nil): answer(.notFound, hook: hook.name, exchange)
            case let .failure(error): answer(Self.refusal(error), hook: hook.name, exchange)
            }
        }
    }

    // MARK: Status

    private func status(_ name: String, action: String, run id: Int64, _ exchange: HTTPExchange) {
        // Only the hook's own action's runs: a token or signature of one hook reads no other's.
        guard let hook = webhooks()?.hooks[name] else { return answer(.notFound, hook: name, exchange) }
        service.reads.read({ [service] () async throws(BatonError) -> RunSnapshot? in try await service.lookUp(run: id) }) { [self] result in
            switch result {
            case let .success(run?) where run.action == action: answer(run, hook, decision: nil, replayed: false, code: 200, exchange)
            case .success: answer(.notFound, hook: name, exchange)
            case let .failure(error): answer(Self.refusal(error), hook: name, exchange)
            }
        }
    }

    // MARK: Answers

    /// A ping: `pong`, and the events the hook takes. No run, no delivery recorded.
    private func pong(_ name: String, _ config: WebhookConfig, _ head: HTTPRequestHead, from address: String, _ exchange: HTTPExchange) {
        guard let hook = config.hooks[name] else { return answer(.notFound, hook: "", exchange) }
        Log.info("webhook \(name) from \(address)\(Self.delivery(head)): ping, answered pong")
        service.metrics.webhookAnswered(hook: name, code: 200)
        exchange.answer(hook.rules.pong(hook: name))
    }

    /// A delivery the hook's rules pass over: 202 with the reason, counted and logged, no run.
    /// Nothing is recorded for its delivery id: a redelivery is decided again, by the rules then.
    private func ignore(_ hook: String, _ ignored: HookRules.Ignored, _ head: HTTPRequestHead, from address: String, _ exchange: HTTPExchange) {
        Log.info("webhook \(hook) from \(address)\(Self.delivery(head)): ignored, \(ignored.message)")
        service.metrics.webhookIgnored(hook: hook, reason: ignored.reason.rawValue)
        service.metrics.webhookAnswered(hook: hook, code: 202)
        exchange.answer(ignored.response)
    }

    /// 200 for success, 500 for failure or cancellation.
    static func outcomeCode(_ run: RunSnapshot) -> Int { run.phase == .success ? 200 : 500 }

    /// A run's answer: `{"run", "phase", "status", "token", …}`.
    private func answer(_ run: RunSnapshot, _ hook: Hook, decision: TriggerDecision?, replayed: Bool, code: Int, _ exchange: HTTPExchange) {
        var json = JSONWriter()
        json.beginObject()
        json.field("run", run.id)
        json.field("phase", run.phase.rawValue)
        json.field("status", "/hooks/\(hook.name)/runs/\(run.id)")
        json.field("token", hook.statusToken(run: run.id))
        json.field("action", run.action)
        json.field("decision", decision?.rawValue)
        if replayed { json.key("replayed"); json.bool(true) }
        if let error = run.error { json.field("error", error) }
        if let exit = run.exitCode { json.field("exitCode", exit) }
        json.endObject()
        service.metrics.webhookAnswered(hook: hook.name, code: code)
        exchange.answer(HTTPResponse(status: code, contentType: "application/json", body: Array((json.text + "\n").utf8)))
    }

    private func answer(_ answer: HookAnswer, hook: String, _ exchange: HTTPExchange) {
        service.metrics.webhookAnswered(hook: hook, code: answer.status)
        exchange.answer(answer.response)
    }

    /// `, delivery ID` for a log line, when the request names one (the gate has checked its form).
    static func delivery(_ head: HTTPRequestHead) -> String {
        HookGate.deliveryFields.lazy.compactMap { head.field($0) }.first.map { ", delivery \($0)" } ?? ""
    }

    /// The answer for a press the service refused: after authentication, so it may say why.
    static func refusal(_ error: BatonError) -> HookAnswer {
        switch error {
        case let .busy(run, _, phase, _, _): HookAnswer(status: 409, message: "busy: run \(run) is \(phase.rawValue)")
        case let .badParam(_, message): HookAnswer(status: 400, message: message)
        case .shuttingDown: HookAnswer(status: 503, message: "batond is stopping")
        case .storeUnavailable: HookAnswer(status: 503, message: "the history cannot be written: try again")
        default: HookAnswer(status: 500, message: error.message)
        }
    }
}
