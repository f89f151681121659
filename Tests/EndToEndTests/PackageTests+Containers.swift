import Foundation
import Testing

/// The harness's containers, side by side: each has a cgroup tree of its own, so two checkouts'
/// test runs may boot containers on one machine at once. In the package tests' serialized suite:
/// within one run, one container test at a time.
extension PackageTests {
    @Test("""
        two containers up at once have cgroup trees of their own: a delegated unit stopped in one \
        leaves the other's unit of the same name running and its child cgroup in place (CI run ci28b: \
        one container's batond.service stopping removed the other's runs' cgroups)
        """)
    func apart() async throws {
        let first = try await Container.make(), second = try await Container.make()
        try await first.boot()
        try await second.boot()
        // As batond.service: a delegated unit with an empty child cgroup of its own (batond's subtree).
        let child = "$(findmnt -n -o TARGET -t cgroup2 | head -1)$(systemctl show -p ControlGroup --value probe.service)/child"
        for container in [first, second] {
            let started = try await container.run("systemd-run --unit=probe.service -p Delegate=yes sleep 300 && mkdir \(child)")
            #expect(started.code == 0, "\(started.stderr)")
        }
        #expect(try await first.run("systemctl stop probe.service").code == 0)
        let other = try await second.run("systemctl is-active probe.service && test -d \(child)")
        #expect(other.code == 0, "the other container's unit or its child cgroup is gone: \(other.stdout)")
        for container in [first, second] {
            let own = try String(contentsOfFile: "/proc/\(container.initPID)/cgroup", encoding: .utf8)
            #expect(own.contains("0::/baton-container-"), "\(own)")
        }
    }
}
