import BatonCore
import BatonEngine
import Testing

/// The actions a reload replaced, kept for a fleet (`Options.keepsEarlierActions`): its queued runs start by the
/// definition they were triggered with, their process only from one this host loaded (`FleetRunDefinitions`).
@Suite("Conductor: the actions a reload replaced, kept only where asked and until forgotten")
struct ConductorEarlierActionsTests {
    static func keeping() -> Conductor {
        var options = Conductor.Options(seed: 0)
        options.keepsEarlierActions = true
        return Conductor(actions: [Action(name: "ship", exec: ["echo", "A"])], options: options)
    }

    @Test("one machine keeps none: its queued runs hold their Action in their flights")
    func noneByDefault() {
        let conductor = Conductor(actions: [Action(name: "ship", exec: ["echo", "A"])], options: Conductor.Options(seed: 0))
        conductor.replaceActions([Action(name: "ship", exec: ["echo", "B"])])
        #expect(conductor.earlierActions().isEmpty)
    }

    @Test("a replaced or removed action is kept once, oldest first, an unchanged one not; forgotten when asked")
    func keptUntilForgotten() {
        let conductor = Self.keeping()
        let (a, b) = (Action(name: "ship", exec: ["echo", "A"]), Action(name: "ship", exec: ["echo", "B"]))
        conductor.replaceActions([a])
        #expect(conductor.earlierActions().isEmpty, "the same definition again replaces nothing")
        conductor.replaceActions([b])
        #expect(conductor.earlierActions(named: "ship") == [a])
        conductor.replaceActions([a])
        conductor.replaceActions([b])
        #expect(conductor.earlierActions(named: "ship") == [a, b], "each once")
        conductor.replaceActions([])
        #expect(conductor.earlierActions(named: "ship") == [a, b] && conductor.action(named: "ship") == nil, "removed: b kept already")
        conductor.forgetEarlier([a])
        #expect(conductor.earlierActions(named: "ship") == [b])
        conductor.forgetEarlier([b])
        #expect(conductor.earlierActions().isEmpty)
    }

    @Test("an in-process action stays registered across a reload and is not kept")
    func registeredNotKept() {
        let conductor = Self.keeping()
        conductor.register(Action(name: "inproc")) { _ in }
        conductor.replaceActions([])
        #expect(conductor.action(named: "inproc") != nil)
        #expect(conductor.earlierActions(named: "inproc").isEmpty)
        #expect(conductor.earlierActions(named: "ship") == [Action(name: "ship", exec: ["echo", "A"])])
    }

    @Test("what the conductor has loaded changes with each reload and each earlier action forgotten, not with a forget of nothing kept")
    func loadedGeneration() {
        let conductor = Self.keeping()
        let (a, b) = (Action(name: "ship", exec: ["echo", "A"]), Action(name: "ship", exec: ["echo", "B"]))
        let first = conductor.loadedGeneration
        conductor.replaceActions([b])
        let reloaded = conductor.loadedGeneration
        #expect(reloaded != first)
        conductor.forgetEarlier([b])
        #expect(conductor.loadedGeneration == reloaded, "b was not kept: nothing changed")
        conductor.forgetEarlier([a])
        let forgot = conductor.loadedGeneration
        #expect(forgot != reloaded && conductor.earlierActions().isEmpty)
        conductor.register(Action(name: "inproc")) { _ in }
        #expect(conductor.loadedGeneration != forgot, "an in-process action registered changes what is loaded too")
    }
}
