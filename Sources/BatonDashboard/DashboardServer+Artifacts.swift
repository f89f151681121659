import BatonCore
import BatonIPC

extension DashboardServer {
    /// The most bytes of a file written to a page before the next wait for the socket to take
    /// them: with the slice in flight, never past the server's stream buffer (1 MiB).
    static let artifactSlice = 256 << 10

    /// One artifact of a run, to save: batond's `artifact` op a piece at a time, on a connection
    /// of its own, each piece written in slices as the page's socket takes them (never the whole
    /// file in memory). As an attachment, its type from its name, never sniffed or framed. A
    /// refusal (no such run or file, the run's action not readable) before anything is sent is
    /// batond's error, as the JSON API answers it.
    func sendArtifact(_ exchange: HTTPExchange, run: Int64, name: String, user: String?) {
        let channel = Channel(path: api.channel.path, reactor: reactor)
        exchange.onClose { channel.close() }
        let first = Request(op: .artifact, run: run, from: 0, name: name, actingAs: user)
        channel.call(first) { [self] result in
            switch result {
            case let .success(response):
                guard let piece = response.piece else {
                    channel.close()
                    let error = response.error ?? WireError(code: .internal, message: "batond answered without the file")
                    return exchange.answer(api.answer(.failure(error)))
                }
                exchange.stream(head: Self.artifactHead(piece.artifact), onClose: { channel.close() })
                Self.send(piece, run: run, name: name, user: user, on: channel, to: exchange)
            case let .failure(failure):
                channel.close()
                exchange.answer(api.json(502, Response.failure(WireError(code: .internal, message: failure.message)).jsonLine()))
            }
        }
    }

    /// Writes `piece` slice by slice as the socket drains, then asks for the next or ends.
    private static func send(_ piece: ArtifactPiece, run: Int64, name: String, user: String?, on channel: Channel, to exchange: HTTPExchange,
                             slice: Int = 0) {
        guard exchange.isOpen else { return channel.close() }
        let start = slice * artifactSlice
        guard start < piece.bytes.count else {
            guard let next = piece.next else {
                channel.close()
                return exchange.end()
            }
            return channel.call(Request(op: .artifact, run: run, from: next, name: name, actingAs: user)) { result in
                // A failure midway (the run pruned meanwhile, batond gone) can only cut the download short.
                guard case let .success(response) = result, let more = response.piece, more.from == next else {
                    channel.close()
                    return exchange.close()
                }
                send(more, run: run, name: name, user: user, on: channel, to: exchange)
            }
        }
        exchange.send(bytes: Array(piece.bytes[start..<min(piece.bytes.count, start + artifactSlice)]))
        exchange.whenDrained(below: artifactSlice) { send(piece, run: run, name: name, user: user, on: channel, to: exchange, slice: slice + 1) }
    }

    /// The answer's head: its length, type and name, as an attachment.
    static func artifactHead(_ info: ArtifactInfo) -> String {
        let file = info.name.split(separator: "/").last.map(String.init) ?? "artifact"
        // The quoted name keeps printable ASCII but quotes and backslashes; filename* has all of it.
        let plain = String(file.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7f && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
        var text = "HTTP/1.1 200 OK\r\nContent-Type: \(info.type)\r\nContent-Length: \(info.size)\r\n"
        text += "Content-Disposition: attachment; filename=\"\(plain)\"; filename*=UTF-8''\(percentEncoded(file))\r\n"
        text += "Cache-Control: no-store\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\nX-Baton-SHA256: \(info.sha256)\r\n"
        for field in Assets.securityFields { text += "\(field.name): \(field.value)\r\n" }
        return text + "\r\n"
    }

    /// RFC 8187's encoding of a file name: unreserved bytes as they are, every other one `%XX`.
    static func percentEncoded(_ text: String) -> String {
        let digits = Array("0123456789ABCDEF")
        var out = ""
        for byte in text.utf8 {
            let c = Character(UnicodeScalar(byte))
            if byte < 0x80, c.isLetter || c.isNumber || "-._~".contains(c) { out.append(c) } else {
                out += "%" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 15)])
            }
        }
        return out
    }
}
