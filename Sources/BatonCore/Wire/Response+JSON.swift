import Foundation

extension Response {
    /// The response as one line of JSON, without its newline. The fields every run-related answer
    /// and event carries are written by hand; the rare heavy ones (a run's whole story, action
    /// lists, stats, prune reports, refused requests) go through `JSONEncoder`.
    public func jsonLine() -> [UInt8] {
        guard detail == nil, actions == nil, triggers == nil, stats == nil, prune == nil, chunk == nil, outputEnd == nil else {
            return (try? Array(Self.encoder.encode(self))) ?? Array(#"{"ok":false}"#.utf8)
        }
        var json = JSONWriter()
        json.beginObject()
        if let id {
            json.key("id")
            switch id {
            case let .number(number): json.int(number)
            case let .text(text): json.string(text)
            }
        }
        json.field("ok", ok)
        json.field("event", event)
        if let error {
            json.key("error")
            json.beginObject()
            json.field("code", error.code.rawValue)
            json.field("message", error.message)
            json.field("run", error.run)
            json.field("since", error.since)
            json.field("param", error.param)
            json.endObject()
        }
        if let run { json.key("run"); run.write(to: &json) }
        if let transition { json.key("transition"); transition.write(to: &json) }
        json.field("decision", decision?.rawValue)
        json.field("shared", shared)
        json.field("cooldown", cooldown)
        if let runs {
            json.key("runs")
            json.beginArray()
            for run in runs { run.write(to: &json) }
            json.endArray()
        }
        json.field("storeProblem", storeProblem)
        json.field("processTree", processTree)
        json.field("metrics", metrics)
        json.field("version", version)
        json.field("pid", pid)
        json.endObject()
        return Array(json.text.utf8)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return encoder
    }()
}

extension RunSnapshot {
    /// The snapshot as `JSONEncoder` would write it (same keys; nil fields left out).
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("id", id)
        json.field("action", action)
        json.field("key", key)
        json.field("phase", phase.rawValue)
        json.field("policy", policy.rawValue)
        json.key("params")
        json.stringMap(params)
        if let trigger {
            json.key("trigger")
            json.beginObject()
            json.field("uid", trigger.uid)
            json.field("gid", trigger.gid)
            json.field("pid", trigger.pid)
            json.endObject()
        }
        json.field("queuedAt", queuedAt.rawValue)
        json.field("startedAt", startedAt?.rawValue)
        json.field("endedAt", endedAt?.rawValue)
        json.field("attempts", attempts)
        json.field("exitCode", exitCode)
        json.field("signal", signal)
        json.field("reason", reason)
        json.field("error", error)
        json.field("cancelledBy", cancelledBy)
        if let progress {
            json.key("progress")
            json.beginObject()
            json.field("fraction", progress.fraction)
            json.field("completed", progress.completed)
            json.field("total", progress.total)
            json.field("message", progress.message)
            json.endObject()
        }
        json.field("estimate", estimate)
        json.field("host", host)
        json.field("seq", seq)
        json.field("cpuUser", cpuUser)
        json.field("cpuSystem", cpuSystem)
        json.field("memoryPeak", memoryPeak)
        json.field("via", via)
        json.field("slot", slot?.rawValue)
        if let waiting {
            json.key("waiting")
            json.beginObject()
            json.field("lock", waiting.lock)
            json.field("limit", waiting.limit)
            for (name, list) in [("holders", waiting.holders), ("ahead", waiting.ahead)] {
                json.key(name)
                json.beginArray()
                for holder in list {
                    json.beginObject()
                    json.field("run", holder.run)
                    json.field("action", holder.action)
                    json.endObject()
                }
                json.endArray()
            }
            json.endObject()
        }
        json.endObject()
    }
}

extension Transition {
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("runID", runID)
        json.field("seq", seq)
        json.field("from", from?.rawValue)
        json.field("to", to.rawValue)
        json.field("at", at.rawValue)
        json.key("detail")
        detail.write(to: &json)
        json.endObject()
    }
}
