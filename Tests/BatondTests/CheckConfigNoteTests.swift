@testable import batond
import Testing

/// `batond --check-config` says that its process and limit lines describe itself, run by its
/// caller, and what batond.service gets under systemd instead.
@Suite("--check-config: this invocation, not the service")
struct CheckConfigNoteTests {
    @Test("a note says whose the lines are and what the unit's Delegate=yes gives, unless run in a unit or without cgroups by choice", arguments: [
        (ProcessTreeSetting.auto, "/user.slice/session-2.scope", false, true),
        (.cgroup, "/user.slice/session-2.scope", false, true),
        (.auto, nil, false, true),
        (.processGroup, "/user.slice/session-2.scope", false, false),
        (.auto, "/system.slice/batond.service", true, false),
    ] as [(ProcessTreeSetting, String?, Bool, Bool)])
    func note(_ setting: ProcessTreeSetting, cgroup: String?, inUnit: Bool, said: Bool) {
        let note = Daemon.invocationNote(setting, cgroup: cgroup, inUnit: inUnit)
        #expect((note != nil) == said)
        guard let note else { return }
        #expect(note.hasPrefix("note: the processes and limits lines describe this invocation (uid "), "\(note)")
        #expect(note.contains("batond.service under systemd, with its Delegate=yes, gets a cgroup of its own and puts each attempt in a cgroup under it"))
        if let cgroup { #expect(note.contains("cgroup \(cgroup))")) }
    }
}
