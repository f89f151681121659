import BatonCore
import BatonIPC
import FoundationEssentials

/// The JSON the page asks for, answered by asking batond as the dashboard's user. Each answer is
/// batond's own response object (`ok`, and `error` with its code and message), with an HTTP
/// status that says the same. Nothing waits: each call completes on the loop when batond answers.
struct API: Sendable {
    let channel: Channel
    let reactor: Reactor
    /// The user a trusted proxy named: every request asks batond `as` them (nil: as the dashboard's own user).
    var user: String? = nil

    /// This API asking as `user`.
    func acting(_ user: String?) -> API {
        var api = self
        api.user = user
        return api
    }
    typealias Answer = @Sendable (HTTPResponse) -> Void

    func status(_ done: @escaping Answer) { forward(Request(op: .status), done) }

    func history(query: String, _ done: @escaping Answer) {
        switch QueryString.historyFilter(query) {
        case let .success(filter):
            // Over 500 runs batond sends the first pages as `runs` events: the page gets one list.
            let pages = LoopOwned<[RunSnapshot]>([], on: reactor)
            forward(Request(op: .history, filter: filter), events: { event, _ in
                if event.event == "runs", let runs = event.runs { pages.access { $0 += runs } }
            }, done) { final in
                var whole = final
                let before = pages.access { $0 }
                if final.ok == true, !before.isEmpty { whole.runs = before + (final.runs ?? []) }
                return whole
            }
        case let .failure(error): done(answer(.failure(WireError(error))))
        }
    }

    /// The runs whose kept output (or a param value) holds the query's `text`, with its lines.
    func search(query: String, _ done: @escaping Answer) {
        switch QueryString.search(query) {
        case let .success((text, filter)): forward(Request(op: .search, filter: filter, text: text), done)
        case let .failure(error): done(answer(.failure(WireError(error))))
        }
    }

    /// Each action's outcomes, durations and usage, or one action's (`action=NAME`).
    func stats(query: String, _ done: @escaping Answer) {
        let action = QueryString.decode(query).first { $0.name == "action" }?.value
        forward(Request(op: .stats, action: action), done)
    }

    /// A run's whole story, with `users`: the names of the uids in it (the page cannot look them up).
    func run(_ id: Int64, _ done: @escaping Answer) {
        forward(Request(op: .show, run: id)) { response in
            guard response.status == 200, let answer = try? JSONDecoder().decode(Response.self, from: Data(response.body)),
                  let detail = answer.detail else { return done(response) }
            var uids = Set(detail.triggers.compactMap { $0.peer?.uid } + [detail.run.trigger?.uid, detail.run.cancelledBy].compactMap { $0 })
            uids.formUnion(detail.transitions.compactMap(\.detail.by))
            var json = JSONWriter()
            json.beginObject()
            for uid in uids.sorted() { json.field(String(uid), UserDatabase.userName(uid)) }
            json.endObject()
            var spliced = response
            spliced.body = Array("{\"users\":\(json.text),".utf8) + response.body.dropFirst()
            done(spliced)
        }
    }

    /// The files a run kept and the notices about the others (`artifacts`).
    func artifacts(_ id: Int64, _ done: @escaping Answer) { forward(Request(op: .artifacts, run: id), done) }

    struct TriggerBody: Decodable {
        var action: String
        var params: [String: String]?
        var policy: Policy?
    }

    struct CancelBody: Decodable {
        var run: Int64
    }

    /// Checks the params against the action's declaration first, with batond's words, so that a
    /// wrong value is refused before anything is sent; then triggers without waiting (the page
    /// follows the run on its event stream).
    func trigger(body: [UInt8], _ done: @escaping Answer) {
        guard let trigger = try? JSONDecoder().decode(TriggerBody.self, from: Data(body)) else {
            return done(answer(.failure(WireError(code: .badRequest, message: #"expected a JSON body like {"action": "deploy", "params": {"env": "prod"}}"#))))
        }
        let params = trigger.params ?? [:]
        channel.call(Request(op: .status).acting(user)) { [self] result in
            if case let .success(status) = result, let info = status.actions?.first(where: { $0.name == trigger.action }),
               let error = Self.check(params, against: info) {
                return done(answer(.failure(WireError(error))))
            }
            forward(Request(op: .trigger, action: trigger.action, params: params, policy: trigger.policy, detach: true), done)
        }
    }

    func cancel(body: [UInt8], _ done: @escaping Answer) {
        guard let cancel = try? JSONDecoder().decode(CancelBody.self, from: Data(body)) else {
            return done(answer(.failure(WireError(code: .badRequest, message: #"expected a JSON body like {"run": 42}"#))))
        }
        forward(Request(op: .cancel, run: cancel.run), done)
    }

    /// The error batond would answer for these params, found with batond's own check.
    static func check(_ params: [String: String], against info: ActionInfo) -> BatonError? {
        var declared: [String: ParamSpec] = [:]
        for (name, param) in info.params {
            var pattern: ParamPattern?
            if let source = param.pattern {
                // A pattern batond compiled compiles here too; should it not, batond has the last word.
                guard let compiled = try? ParamPattern(source) else { return nil }
                pattern = compiled
            }
            declared[name] = ParamSpec(pattern: pattern, defaultValue: param.default, secret: param.secret ?? false)
        }
        do {
            _ = try Action.resolveParams(params, declared: declared, action: info.name)
            return nil
        } catch {
            return error
        }
    }

    /// Asks batond and answers with its final response (`gather` makes it whole from its events first).
    func forward(_ request: Request, events: Channel.Events? = nil, _ done: @escaping Answer,
                         gather: @escaping @Sendable (Response) -> Response = { $0 }) {
        let request = request.acting(user)
        channel.call(request, events: events) { [self] result in
            switch result {
            case let .success(response):
                var answered = gather(response)
                answered.id = nil
                done(answered.error.map { answer(.failure($0)) } ?? json(200, answered.jsonLine()))
            case let .failure(failure):
                done(json(502, Response.failure(WireError(code: .internal, message: failure.message)).jsonLine()))
            }
        }
    }

    func answer(_ result: Result<Response, WireError>) -> HTTPResponse {
        switch result {
        case let .success(response): json(200, response.jsonLine())
        case let .failure(error): json(Self.status(of: error.code), Response.failure(error).jsonLine())
        }
    }

    /// The HTTP status that says what batond's error code says.
    static func status(of code: ErrorCode) -> Int {
        switch code {
        case .badRequest: 400
        case .forbidden: 403
        case .unknownAction, .unknownRun: 404
        case .busy, .paused, .notWaiting: 409
        case .rateLimited: 429
        case .shuttingDown, .storeUnavailable: 503
        default: 500
        }
    }

    func json(_ status: Int, _ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", extraFields: Assets.securityFields, body: body)
    }
}

extension Response {
    static func failure(_ error: WireError) -> Response {
        var response = Response(id: nil, ok: false)
        response.error = error
        return response
    }
}
