import Foundation
import Testing

/// `cooldown` with real runs: the answer, the record, `--policy` and `--force`, and a restart.
@Suite("End to end: cooldown", .serialized, .offPool)
struct CooldownEndToEndTests {
    static let config = """
        {
          socketMode: "0666",
          actions: {
            deploy: { exec: ["true"], cooldown: "10m", force: true, policies: ["replace", "queue", "join"] },
            strict: { exec: ["true"], cooldown: "10m" },
          },
        }
        """

    @Test("inside the window a trigger runs nothing, exits 0 with the last success and is recorded as cooled; --policy cannot get round it, --force can where allowed; a restart keeps the window")
    func cooled() throws {
        let daemon = try Daemon(config: Self.config)
        #expect(try daemon.baton("run", "deploy").code == 0)
        let again = try daemon.baton("run", "deploy")
        #expect(again.code == 0, "\(again.stderr)")
        #expect(again.stdout.contains("deploy run 1 succeeded ") && again.stdout.contains(" ago; cooldown 10m, nothing run"), "\(again.stdout)")
        for policy in ["replace", "queue", "join"] {
            let forced = try daemon.baton("run", "deploy", "--policy", policy)
            #expect(forced.code == 0 && forced.stdout.contains("nothing run"), "\(policy): \(forced.stdout) \(forced.stderr)")
        }
        let json = try daemon.baton("run", "deploy", "--json")
        #expect(json.stdout.contains(#""decision" : "cooled""#) && json.stdout.contains(#""id" : 1,"#), "\(json.stdout)")
        let history = try daemon.baton("history", "--json")
        #expect(history.stdout.components(separatedBy: #""action" : "deploy""#).count == 2, "one run of deploy: \(history.stdout)")
        let show = try daemon.baton("show", "1")
        #expect(show.stdout.contains("cooled (answered with this success inside the cooldown; nothing ran)  by "), "\(show.stdout)")
        let status = try daemon.baton("status").stdout
        #expect(status.contains("\nrules:\n  deploy: cooldown 10m: last success ") && status.contains(" ago (run 1), nothing runs for "), "\(status)")
        #expect(status.contains("\n  strict: cooldown 10m: no success inside it, a trigger runs\n"), "\(status)")

        let forced = try daemon.baton("run", "deploy", "--force")
        #expect(forced.code == 0 && forced.stdout.contains("deploy run 2 succeeded in"), "\(forced.stdout) \(forced.stderr)")
        let refused = try daemon.baton("run", "strict", "--force")
        #expect(refused.code != 0 && refused.stderr.contains("does not allow force"), "\(refused.stderr)")
        let metrics = try daemon.baton("metrics").stdout
        #expect(metrics.contains(#"baton_triggers_total{action="deploy",decision="cooled"} 5"#), "\(metrics)")
        daemon.stop()

        let restarted = try Daemon(config: Self.config, reusing: daemon)
        let after = try restarted.baton("run", "deploy")
        #expect(after.code == 0 && after.stdout.contains("deploy run 2 succeeded ") && after.stdout.contains("nothing run"),
                "the restart forgot the window: \(after.stdout)")
        let seeded = try restarted.baton("status", "--json").stdout
        #expect(seeded.contains(#""cooling" : ["#) && seeded.contains(#""cooldown" : 600000000"#), "status after a restart: \(seeded)")
    }

    @Test("retention keeps the success a key cools on: maxRunsPerAction 1, k=x then k=y succeed, a prune, then k=x is cooled with its own success (before: the cooled record's write was refused, exit 70, until a restart)")
    func pruneKeepsCooling() throws {
        let daemon = try Daemon(config: """
            { socketMode: "0666", retention: { maxRunsPerAction: 1 },
              actions: { cool: { exec: ["true"], cooldown: "1h", params: { k: {} }, keyParams: ["k"] } } }
            """)
        #expect(try daemon.baton("run", "cool", "-p", "k=x").code == 0)
        #expect(try daemon.baton("run", "cool", "-p", "k=y").code == 0)
        let pruned = try daemon.baton("prune")
        #expect(pruned.code == 0, "\(pruned.stderr)")
        let again = try daemon.baton("run", "cool", "-p", "k=x", "--json")
        #expect(again.code == 0, "\(again.stdout) \(again.stderr)")
        #expect(again.stdout.contains(#""decision" : "cooled""#) && again.stdout.contains(#""id" : 1,"#), "\(again.stdout)")
    }
}
