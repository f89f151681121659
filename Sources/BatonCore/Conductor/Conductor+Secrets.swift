/// A run's secret params (`params: { token: { secret: true } }`) reach its process and nothing
/// else. Their values come with each `Launch` (the run in flight keeps them in memory only); the
/// process gets them in its environment, and every occurrence in what it writes is replaced by
/// `***` here, where its output enters the conductor: the history's `OutputWriter`, the live
/// followers (`baton logs -f`, the dashboard, a fleet's remote followers) and the line sink (the
/// journal) are all downstream. Its error line, its progress messages and the tail kept with
/// its end are masked the same way.
extension Conductor {
    /// What hashes secret params' values for keys (the service seals its triggers with it too).
    public var sealer: SecretSealer? { options.sealer }

    /// The masking of one attempt's output, stream by stream, and where the bytes it holds back go.
    struct Redaction {
        var source: OutputSource
        var streams: [StandardStream: SecretRedactor]
        /// The last of the masked output, both streams as they came out of the mask: the tail
        /// kept with the attempt's end (the process's own tail interleaves the raw streams, where
        /// a value split by the other stream's bytes would escape a mask applied afterwards).
        var tail: [UInt8] = []

        static let tailLimit = 64 * 1_024

        mutating func keep(_ bytes: [UInt8]) {
            tail += bytes
            if tail.count > 2 * Self.tailLimit { tail.removeFirst(tail.count - Self.tailLimit) }
        }

        /// `bytes` of `run`'s `stream` masked by its redaction in `redactions`, changed in place
        /// (no copy of its tail, up to 128 KiB, under the conductor's lock); nil when it has none.
        static func redact(_ redactions: inout IDMap<Int64, Redaction>, _ run: Int64, _ stream: StandardStream,
                           _ bytes: [UInt8]) -> [UInt8]? {
            guard let out = redactions[run]?.streams[stream]?.redact(bytes) else { return nil }
            redactions[run]?.keep(out)
            return out
        }
    }

    /// The job an attempt runs: the launch's params with the secrets' values in place of `***`.
    static func jobParams(_ launch: Launch) -> [String: String] {
        launch.secrets.isEmpty ? launch.params : launch.params.merging(launch.secrets) { _, secret in secret }
    }

    /// The run's key as its history has it (a secret key param by its hash, never `***` nor the value).
    func outputKey(_ launch: Launch) -> String {
        guard !launch.secrets.isEmpty else { return launch.action.key(for: launch.params) }
        return reading { $0.snapshot(of: launch.run)?.key } ?? launch.action.key(for: launch.params)
    }

    /// Starts masking an attempt's output (on the loop, before its first byte can arrive).
    func startRedaction(_ source: OutputSource, _ redactor: SecretRedactor?) {
        guard let redactor else { return }
        core.access { $0.redactions[source.run] = Redaction(source: source, streams: [.stdout: redactor, .stderr: redactor]) }
    }

    /// Bytes a run wrote, masked (on the loop); some may be held back until the next chunk.
    func redacted(_ run: Int64, _ stream: StandardStream, _ bytes: [UInt8]) -> [UInt8] {
        core.access { Redaction.redact(&$0.redactions, run, stream, bytes) } ?? bytes
    }

    /// The attempt ended: what was held back is output after all (no value can end it now), and
    /// the tail kept with its end is the masked output's.
    func finishRedaction(_ run: Int64, _ outcome: AttemptOutcome) -> AttemptOutcome {
        guard var redaction = core.access({ $0.redactions.removeValue(forKey: run) }) else { return outcome }
        for stream in StandardStream.allCases {
            guard var redactor = redaction.streams[stream] else { continue }
            let left = redactor.finish()
            guard !left.isEmpty else { continue }
            keepOutput(redaction.source, stream, left)
            redaction.keep(left)
        }
        var outcome = outcome
        outcome.output = Array(redaction.tail.suffix(Redaction.tailLimit))
        outcome.truncated = outcome.truncated || redaction.tail.count > Redaction.tailLimit
        return outcome
    }

    /// Progress with its message masked. A message of `Progress.messageLimit` characters may
    /// be a longer one cut (`Progress(line:)`): a value across that cut leaves its start at the
    /// end, masked too.
    static func masked(_ progress: Progress, _ redactor: SecretRedactor?) -> Progress {
        guard let redactor, let message = progress.message else { return progress }
        var progress = progress
        progress.message = redactor.redactAll(message, cutBack: message.count >= Progress.messageLimit)
        return progress
    }

    /// An attempt's end as the conductor tells it: its error masked (and its tail, which
    /// `finishRedaction` then replaces by the masked output's), then said to be out of memory
    /// where it was: the masking sees the error's line at its end, where `LastLine` cut it.
    static func masked(_ outcome: AttemptOutcome, _ redactor: SecretRedactor?) -> AttemptOutcome {
        var outcome = outcome
        if let redactor {
            // The error's line is the first 300 bytes of the last stderr line (`LastLine`): a value
            // across that cut leaves its start at the end, masked too.
            outcome.result.error = outcome.result.error.map { redactor.redactAll($0, cutBack: $0.utf8.count >= LastLine.maxLength) }
            outcome.output = redactor.redactAll(outcome.output, cutFront: outcome.truncated)
        }
        outcome.result.tellOutOfMemory()
        return outcome
    }
}
