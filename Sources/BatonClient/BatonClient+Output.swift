import BatonCore

extension BatonClient {
    /// Reads run `run`'s output from position `from`: with `follow`, live until the run ends
    /// (the end then comes once the run's end is durable), else what the history keeps.
    /// `leave()` (or cancelling the task awaiting `end`) stops reading.
    public func output(run: Int64, from: Int64 = 0, follow: Bool = false) -> RunOutput {
        let (chunks, continuation) = AsyncThrowingStream<OutputChunk, any Error>.makeStream()
        let answer = Answer<OutputEnd>()
        let sink = Sink(event: { response in
            if response.event == "output", let chunk = response.chunk { continuation.yield(chunk) }
        }, end: { result in
            let end = Result { () throws -> OutputEnd in
                let response = try Self.answer(result)
                guard let run = response.run else { throw BatonClientError.internal("batond answered output without the run") }
                return OutputEnd(run: run, position: response.outputEnd, dropped: response.outputDropped)
            }
            continuation.finish(throwing: end.refusal)
            answer.finish(end)
        })
        let request = Request(op: .output, run: run, from: from, follow: follow)
        // Sent before anyone can leave it: the stream and the handle leave by its id (nil: it failed at once).
        let id = connection.handle(.call(request, sink))
        continuation.onTermination = { [connection] _ in
            if let id { connection.handle(.leave(id)) }
        }
        return RunOutput(chunks: chunks, answer: answer) { [connection] in
            if let id { connection.handle(.leave(id)) }
        }
    }
}
