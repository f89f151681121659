import BatonCore
import BatonIPC

extension DashboardServer {
    /// The most bytes of a file written to a page before the next wait for the socket to take
    /// them: with the slice in flight, never past the server's stream buffer (1 MiB).
    static let artifactSlice = 256 << 10

    /// One artifact of a run, to save: batond's `artifact` op a piece at a time, on a connection
    /// of its own, each piece written in slices as the page's socket takes them (never the whole
    /// file in memory). As an attachment of bytes (`application/octet-stream`), never sniffed or
    /// framed. Admitted as raw output downloads are (a slot each, given back at its close); a
    /// reader that takes nothing for `downloadStall` is closed. A refusal (no such run or file,
    /// the run's action not readable) before anything is sent is batond's error, as the JSON API answers it.
    func sendArtifact(_ exchange: HTTPExchange, run: Int64, name: String, user: String?) {
        guard admitDownload() else { return exchange.answer(refusal(503, "other downloads are being read; try again in a moment")) }
        let slot = DownloadSlot(downloads)
        exchange.onClose { slot.release() }
        let channel = Channel(path: api.channel.path, reactor: reactor)
        exchange.onClose { channel.close() }
        let first = Request(op: .artifact, run: run, from: 0, name: name).acting(user)
        let stall = limits.downloadStall
        channel.call(first) { [self] result in
            switch result {
            case let .success(response):
                guard let piece = response.piece else {
                    channel.close()
                    slot.release()
                    let error = response.error ?? WireError(code: .internal, message: "batond answered without the file")
                    return exchange.answer(api.answer(.failure(error)))
                }
                // The stream's onClose replaces the exchange's: it gives the slot back too.
                exchange.stream(head: Self.artifactHead(piece.artifact), onClose: {
                    channel.close()
                    slot.release()
                })
                exchange.extendDeadline(by: stall)
                Self.send(piece, Download(run: run, name: name, user: user, stall: stall), on: channel, to: exchange)
            case let .failure(failure):
                channel.close()
                slot.release()
                exchange.answer(api.json(502, Response.failure(WireError(code: .internal, message: failure.message)).jsonLine()))
            }
        }
    }

    /// What one download asks batond for, and how long its reader may leave the bytes waiting.
    struct Download: Sendable {
        var run: Int64
        var name: String
        var user: String?
        var stall: Duration
    }

    /// Writes `piece` slice by slice as the socket drains (each drain moves the stall deadline on),
    /// then asks for the next piece, of the same file, or ends.
    private static func send(_ piece: ArtifactPiece, _ download: Download, on channel: Channel, to exchange: HTTPExchange, slice: Int = 0) {
        guard exchange.isOpen else { return channel.close() }
        let start = slice * artifactSlice
        guard start < piece.bytes.count else {
            guard let next = piece.next else {
                channel.close()
                return exchange.end()
            }
            let request = Request(op: .artifact, run: download.run, from: next, name: download.name).acting(download.user)
            return channel.call(request) { result in
                // A failure midway (the run pruned meanwhile, batond gone, another attempt's file kept) can only cut the download short.
                guard case let .success(response) = result, let more = response.piece, more.follows(piece, at: next) else {
                    channel.close()
                    return exchange.close()
                }
                send(more, download, on: channel, to: exchange)
            }
        }
        exchange.send(bytes: Array(piece.bytes[start..<min(piece.bytes.count, start + artifactSlice)]))
        exchange.whenDrained(below: artifactSlice) {
            exchange.extendDeadline(by: download.stall)
            send(piece, download, on: channel, to: exchange, slice: slice + 1)
        }
    }

    /// The answer's head: its length, type and name, as an attachment.
    static func artifactHead(_ info: ArtifactInfo) -> String {
        let file = info.name.split(separator: "/").last.map(String.init) ?? "artifact"
        // The quoted name keeps printable ASCII but quotes and backslashes; filename* has all of it.
        let plain = String(file.unicodeScalars.map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7f && $0 != "\"" && $0 != "\\" ? Character($0) : "_" })
        // Bytes to save, whatever the name says (the listing has the type): never a same-origin script or page.
        var text = "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(info.size)\r\n"
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

/// An admitted download's slot, given back once: at the exchange's close, or its early answer.
final class DownloadSlot: Sendable {
    let downloads: LoopOwned<Int>
    let held: LoopOwned<Bool>

    init(_ downloads: LoopOwned<Int>) {
        self.downloads = downloads
        held = LoopOwned(true, on: downloads.reactor)
    }

    func release() {
        downloads.reactor.onLoop { [self] in
            guard held.access({ held in
                defer { held = false }
                return held
            }) else { return }
            downloads.access { $0 -= 1 }
        }
    }
}
