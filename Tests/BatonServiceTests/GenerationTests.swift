import BatonCore
@testable import BatonService
import Testing

@Suite("Generation: the actions sorted by name, kept with them")
struct GenerationTests {
    @Test("sorted at creation, and again whenever the actions change")
    func sortedActions() {
        var generation = Generation(actions: [Action(name: "b"), Action(name: "c"), Action(name: "a")], owner: 0)
        #expect(generation.sortedActions.map(\.name) == ["a", "b", "c"])
        generation.actions["0"] = Action(name: "0")
        #expect(generation.sortedActions.map(\.name) == ["0", "a", "b", "c"])
        generation.actions["b"] = nil
        #expect(generation.sortedActions.map(\.name) == ["0", "a", "c"])
        generation.actions["a"]?.exec = ["changed"]
        #expect(generation.sortedActions.first { $0.name == "a" }?.exec == ["changed"])
    }
}
