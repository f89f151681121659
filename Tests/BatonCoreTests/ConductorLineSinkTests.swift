import BatonCore
import Testing

/// The conductor's line sink (batond: the journal) gets every line of a run's output.
@Suite("Conductor: output lines to a sink")
struct ConductorLineSinkTests {
    final class Lines: OutputLineSink {
        let recorder = Recorder<OutputLine>()
        func write(_ line: OutputLine) { recorder.append(line) }
    }

    @Test("each line once, with its stream, run, action and key; a last line without a newline at the attempt's end")
    func lines() async throws {
        let sink = Lines()
        let action = Action(name: "talk", exec: ["sh", "-c", "printf 'one\\ntwo\\n'; printf 'oops\\n' >&2; printf 'three'"],
                            params: ["env": ParamSpec()], keyParams: ["env"])
        let conductor = Conductor(actions: [action], options: Conductor.Options(lineSink: sink))
        let ticket = try await conductor.trigger(TriggerRequest(action: "talk", params: ["env": "prod"]))
        let ended = await ticket.outcome()
        #expect(ended?.phase == .success)
        let lines = sink.recorder.all
        #expect(lines.filter { $0.stream == .stdout }.map { String(decoding: $0.bytes, as: UTF8.self) } == ["one", "two", "three"])
        #expect(lines.filter { $0.stream == .stderr }.map { String(decoding: $0.bytes, as: UTF8.self) } == ["oops"])
        #expect(lines.allSatisfy { $0.runID == ticket.run.id && $0.action == "talk" && $0.key == action.key(for: ["env": "prod"]) })
    }
}
