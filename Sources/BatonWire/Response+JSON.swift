import BatonEngine
import FoundationEssentials

extension Response {
    /// The response as one line of JSON, without its newline. The fields every run-related answer
    /// and event carries, and `status`'s actions, are written by hand; the rare heavy ones (a
    /// run's whole story, stats, prune reports, refused requests) go through `JSONEncoder`.
    /// The run's snapshot is `rendered`'s bytes where they are its (`RenderedRun`).
    public func jsonLine(rendered: RenderedRun? = nil) -> [UInt8] {
        guard detail == nil, triggers == nil, stats == nil, matches == nil, events == nil, prune == nil, chunk == nil, outputEnd == nil,
              artifacts == nil, piece == nil else {
            return (try? Array(JSONWriter.encoder.encode(self))) ?? Array(#"{"ok":false}"#.utf8)
        }
        var json = JSONWriter(capacity: run == nil ? 256 : 768)
        json.beginObject()
        json.field("id", id)
        json.field("ok", ok)
        json.field("event", event)
        if let error {
            json.key("error")
            json.beginObject()
            json.field("code", error.code.rawValue)
            json.field("message", error.message)
            json.field("run", error.run)
            json.field("since", error.since)
            json.field("line", error.line.map(Int64.init))
            json.field("param", error.param)
            json.field("next", error.next)
            json.endObject()
        }
        if let run { json.key("run"); json.run(run, rendered) }
        if let transition { json.key("transition"); transition.write(to: &json) }
        json.field("decision", decision?.rawValue)
        json.field("shared", shared)
        json.field("cooldown", cooldown)
        if let replaced {
            json.key("replaced")
            json.beginArray()
            for id in replaced { json.int(id) }
            json.endArray()
        }
        if let runs {
            json.key("runs")
            json.beginArray()
            for run in runs { run.write(to: &json) }
            json.endArray()
        }
        if let actions {
            json.key("actions")
            json.beginArray()
            for action in actions { action.write(to: &json) }
            json.endArray()
        }
        json.field("storeProblem", storeProblem)
        json.field("processTree", processTree)
        json.field("metrics", metrics)
        if let warnings { json.key("warnings"); json.strings(warnings) }
        json.field("version", version)
        if let pause { json.key("pause"); pause.write(to: &json) }
        json.field("pid", pid)
        json.field("restarting", restarting)
        json.field("skipped", skipped)
        json.endObject()
        return json.take()
    }
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
        if let hook {
            json.key("hook")
            json.beginObject()
            json.field("run", hook.run)
            json.field("action", hook.action)
            json.field("event", hook.event.rawValue)
            json.endObject()
        }
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
        json.field("debounceUntil", debounceUntil?.rawValue)
        json.field("rateUntil", rateUntil?.rawValue)
        json.field("coolsUntil", coolsUntil?.rawValue)
        json.field("line", line.map(Int64.init))
        for (name, list) in [("needs", needs), ("neededBy", neededBy)] {
            guard let list else { continue }
            json.key(name)
            json.beginArray()
            for need in list {
                json.beginObject()
                json.field("action", need.action)
                json.field("run", need.run)
                json.field("phase", need.phase.rawValue)
                json.field("reason", need.reason)
                json.endObject()
            }
            json.endArray()
        }
        if let approval {
            json.key("approval")
            json.beginObject()
            json.key("by")
            json.strings(approval.by)
            json.field("until", approval.until?.rawValue)
            json.field("verdict", approval.verdict?.rawValue)
            json.field("decidedBy", approval.decidedBy)
            json.field("decidedAt", approval.decidedAt?.rawValue)
            json.field("reason", approval.reason)
            json.endObject()
        }
        json.endObject()
    }
}

extension ActionPause {
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("action", action)
        json.field("by", by)
        json.field("reason", reason)
        json.field("at", at.rawValue)
        json.field("until", until?.rawValue)
        json.field("hold", hold ? true : nil)
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

extension ActionInfo {
    /// The action as `JSONEncoder` would write it (same keys; nil fields left out).
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("name", name)
        json.field("description", description)
        json.key("exec")
        json.strings(exec)
        json.field("policy", policy.rawValue)
        json.key("policies")
        json.strings(policies.map(\.rawValue))
        json.field("timeout", timeout)
        json.key("params")
        json.beginObject()
        for (name, param) in params.sorted(by: { $0.key < $1.key }) {
            json.key(name)
            json.beginObject()
            json.field("pattern", param.pattern)
            json.field("default", param.default)
            json.field("secret", param.secret)
            json.endObject()
        }
        json.endObject()
        json.key("keyParams")
        json.strings(keyParams)
        if let inFlight {
            json.key("inFlight")
            json.beginArray()
            for run in inFlight { run.write(to: &json) }
            json.endArray()
        }
        if let last { json.key("last"); last.write(to: &json) }
        json.field("removed", removed)
        if let allowed { json.key("allowed"); json.strings(allowed.map(\.rawValue)) }
        if let schedules { json.key("schedules"); json.strings(schedules) }
        json.field("scheduleJitter", scheduleJitter)
        json.field("catchUp", catchUp)
        json.field("queueDepth", queueDepth.map(Int64.init))
        if let locks {
            json.key("locks")
            json.beginArray()
            for lock in locks {
                json.beginObject()
                json.field("name", lock.name)
                json.field("limit", lock.limit)
                json.endObject()
            }
            json.endArray()
        }
        json.field("cooldown", cooldown)
        json.field("force", force)
        if let hooks {
            json.key("hooks")
            json.beginObject()
            json.field("failure", hooks.failure)
            json.field("success", hooks.success)
            json.field("change", hooks.change)
            json.field("chain", hooks.chain)
            json.endObject()
        }
        if let paused { json.key("paused"); paused.write(to: &json) }
        if let rateLimit { json.key("rateLimit"); rateLimit.write(to: &json) }
        if let needs { json.key("needs"); json.strings(needs) }
        if let cooling {
            json.key("cooling")
            json.beginArray()
            for run in cooling { run.write(to: &json) }
            json.endArray()
        }
        json.endObject()
    }
}
