import BatonCore
import BatonIPC

extension API {
    /// A run's output as the bytes it wrote (what the history keeps, in order, both streams), to
    /// save: `application/octet-stream` as an attachment, never shown by the browser. Read on a
    /// connection of its own and held whole for the answer's length, so at most `limit` bytes
    /// (a 413 past it, pointing at `baton logs`).
    func rawOutput(_ id: Int64, limit: Int, _ done: @escaping Answer) {
        let channel = Channel(path: self.channel.path, reactor: reactor)
        let bytes = LoopOwned<[UInt8]?>([], on: reactor)
        channel.call(Request(op: .output, run: id).acting(user), events: { response, _ in
            guard let chunk = response.chunk else { return }
            let over = bytes.access { bytes -> Bool in
                guard let count = bytes?.count, count + chunk.bytes.count <= limit else { bytes = nil; return true }
                bytes!.append(contentsOf: chunk.bytes)
                return false
            }
            if over { channel.close() }
        }, done: { [self] result in
            channel.close()
            guard let body = bytes.access({ $0 }) else {
                return done(HTTPResponse.refusal(413, "run \(id)'s output is larger than the dashboard saves (\(limit) bytes): use `baton logs \(id) > FILE`",
                                                 extraFields: Assets.securityFields))
            }
            switch result {
            case let .success(response) where response.error != nil:
                done(answer(.failure(response.error!)))
            case let .success(response):
                done(Self.raw(id, body, dropped: response.outputDropped ?? 0))
            case let .failure(failure):
                done(json(502, Response.failure(WireError(code: .internal, message: failure.message)).jsonLine()))
            }
        })
    }

    static func raw(_ id: Int64, _ body: [UInt8], dropped: Int64) -> HTTPResponse {
        var fields = Assets.securityFields
        fields.append(.init(name: "Content-Disposition", value: "attachment; filename=\"run-\(id)-output\""))
        if dropped > 0 { fields.append(.init(name: "X-Baton-Output-Dropped", value: String(dropped))) }
        return HTTPResponse(status: 200, contentType: "application/octet-stream", extraFields: fields, body: body)
    }
}
