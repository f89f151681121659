import BatonClient
import BatonCore
import BatonIPC
import Foundation
import Testing

/// Artifacts through the real binaries: an action writes text, binary and nested files to
/// `$BATON_ARTIFACTS`; they come back byte-exact through `baton artifacts` and `BatonClient`,
/// are listed by `show`, refused to a peer who may not read the run, and the directory is gone after.
@Suite("End to end: artifacts", .serialized, .offPool)
struct ArtifactEndToEndTests {
    /// 200 KiB of every byte value, and the script that writes it with the other files.
    static let script = """
        set -e; cd "$BATON_ARTIFACTS"; pwd > /dev/stderr; echo "run $BATON_RUN_ID" > report.txt; mkdir -p dist/deep
        i=0; while [ $i -lt 800 ]; do printf "$(printf '\\\\%03o' $(seq 0 255) | tr -d '\\n')"; i=$((i+1)); done > dist/deep/blob.bin
        ln -s /etc/shadow stolen; ls -ld "$BATON_ARTIFACTS" | cut -c1-10 >&2
        """

    static func expectedBlob() -> [UInt8] { Array((0..<800).flatMap { _ in (0...255).map(UInt8.init) }) }

    static var config: String {
        """
        {
          socketMode: "0666",
          requireUser: false,
          actions: {
            make: { exec: ["bash", "-c", \(quoted(script))], artifacts: { keep: "1MiB" } },
            hidden: { exec: ["bash", "-c", \(quoted(script))], artifacts: { keep: "1MiB" }, allow: { read: { users: [] } } },
            asNobody: { exec: ["sh", "-c", "id -u > \\"$BATON_ARTIFACTS/who.txt\\"; stat -c %U:%a \\"$BATON_ARTIFACTS\\" >> \\"$BATON_ARTIFACTS/who.txt\\""],
                        user: "nobody", artifacts: { keep: "1KiB" } },
            tooMuch: { exec: ["sh", "-c", "head -c 5000 /dev/zero > \\"$BATON_ARTIFACTS/z\\"; exit 4"], artifacts: { keep: "4KiB" } },
            retried: { exec: ["sh", "-c", "echo $BATON_ATTEMPT > \\"$BATON_ARTIFACTS/attempt-$BATON_ATTEMPT.txt\\"; [ $BATON_ATTEMPT = 2 ]"],
                       retry: { attempts: 1, backoff: "10ms" }, artifacts: { keep: "4KiB" } },
            stopped: { exec: ["sh", "-c", "echo partial > \\"$BATON_ARTIFACTS/partial.log\\"; : > \\"$BATON_ARTIFACTS/empty\\"; echo written; sleep 300"],
                       artifacts: { keep: "4KiB" }, killGrace: "200ms" },
          },
        }
        """
    }

    static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n") + "\""
    }

    @Test("text, binary and nested files come back byte-exact by CLI and client; links named; the directory gone after")
    func keptAndFetched() async throws {
        let daemon = try Daemon(config: Self.config)
        chmod(daemon.directory, 0o755)
        let ran = try daemon.baton("run", "make")
        #expect(ran.code == 0, "\(ran.stderr)")
        let blob = Self.expectedBlob()

        let listed = try daemon.baton("artifacts", "1")
        #expect(listed.code == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("dist/deep/blob.bin"), "\(listed.stdout)")
        #expect(listed.stdout.contains("report.txt"))
        #expect(listed.stdout.contains("note: stolen: a symlink, not followed"), "\(listed.stdout)")
        let show = try daemon.baton("show", "1")
        #expect(show.stdout.contains("artifacts:"), "\(show.stdout)")
        #expect(show.stdout.contains("dist/deep/blob.bin"))
        let shownJSON = try daemon.baton("show", "1", "--json").stdout
        struct Shown: Decodable { var artifacts: ArtifactList? }
        let shownList = try JSONDecoder().decode(Shown.self, from: Data(shownJSON.utf8)).artifacts
        #expect(shownList?.files.map(\.name).contains("dist/deep/blob.bin") == true, "\(shownJSON.suffix(400))")
        #expect(try JSONDecoder().decode(RunDetail.self, from: Data(shownJSON.utf8)).run.id == 1)

        // The CLI: to a file with -o, and to a pipe.
        let file = daemon.directory + "/blob.out"
        #expect(try daemon.baton("artifacts", "1", "dist/deep/blob.bin", "-o", file).code == 0)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: file))) == blob)
        // -o over a symlink replaces the link (the file it named untouched), the new file 0600, nothing else left beside it.
        let victim = daemon.directory + "/victim", linked = daemon.directory + "/out/linked"
        try FileManager.default.createDirectory(atPath: daemon.directory + "/out", withIntermediateDirectories: true)
        try Data("mine\n".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: linked, withDestinationPath: victim)
        #expect(try daemon.baton("artifacts", "1", "dist/deep/blob.bin", "-o", linked).code == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: victim)) == Data("mine\n".utf8), "the file the link named is untouched")
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: linked))) == blob)
        let attributes = try FileManager.default.attributesOfItem(atPath: linked)
        #expect(attributes[.type] as? FileAttributeType == .typeRegular && attributes[.posixPermissions] as? Int == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.directory + "/out") == ["linked"])
        let piped = daemon.directory + "/blob.piped"
        #expect(try execute("/bin/sh", ["-c", "\(Binaries.baton) --socket \(daemon.socket) artifacts 1 dist/deep/blob.bin > \(piped)"]).code == 0)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: piped))) == blob)
        #expect(try daemon.baton("artifacts", "1", "report.txt").stdout == "run 1\n")
        #expect(try daemon.baton("artifacts", "1", "stolen").code == 2)
        // To a terminal (script's pseudo-terminal): the text file is written, the binary one refused.
        let onTerminal = { (name: String) throws -> Output in
            try execute("/usr/bin/script", ["-qec", "\(Binaries.baton) --socket \(daemon.socket) artifacts 1 \(name)", "/dev/null"])
        }
        let refused = try onTerminal("dist/deep/blob.bin")
        #expect(refused.code == 2, "\(refused)")
        #expect(refused.stdout.contains("is binary (application/octet-stream): not written to a terminal"), "\(refused)")
        #expect(try onTerminal("report.txt").stdout.contains("run 1"))

        // The client: listed with sizes and digests, read back a piece at a time.
        let client = try BatonClient(socket: daemon.socket)
        let list = try await client.artifacts(run: 1)
        #expect(list.files.map(\.name) == ["dist/deep/blob.bin", "report.txt"])
        #expect(list.files.map(\.size) == [Int64(blob.count), 6])
        var fetched: [UInt8] = []
        let info = try await client.artifact(run: 1, name: "dist/deep/blob.bin") { fetched += $0 }
        #expect(fetched == blob)
        let sum = try execute("/usr/bin/sha256sum", [file]).stdout.prefix(64)
        #expect(info.sha256 == String(sum))

        // The attempt's directory was 0700, and nothing of it is left once the run has ended.
        #expect(try daemon.baton("show", "1", "--output").stdout.contains("drwx------"))
        let left = try FileManager.default.contentsOfDirectory(atPath: daemon.database + "-artifacts")
        #expect(left.isEmpty, "\(left)")
    }

    @Test("the ops as docs/protocol.md says them: artifacts lists, artifact gives base64 pieces with next, a name not kept is bad_request")
    func protocolShape() throws {
        let daemon = try Daemon(config: Self.config)
        #expect(try daemon.baton("run", "make").code == 0)
        let client = try Client(path: daemon.socket)
        func ask(_ line: String) throws -> [String: Any] {
            try client.sendRaw(Data((line + "\n").utf8))
            let answer = try #require(try client.receiveLine(timeout: .seconds(10)))
            return try #require(try JSONSerialization.jsonObject(with: Data(answer)) as? [String: Any])
        }
        let listed = try #require(try ask(#"{"id":1,"op":"artifacts","run":1}"#)["artifacts"] as? [String: Any])
        let files = try #require(listed["files"] as? [[String: Any]])
        #expect(files.map { $0["name"] as? String } == ["dist/deep/blob.bin", "report.txt"])
        #expect(Set(files[1].keys) == ["name", "size", "sha256", "type", "attempt"])
        #expect(listed["notices"] as? [String] == ["stolen: a symlink, not followed"])
        let first = try #require(try ask(#"{"id":2,"op":"artifact","run":1,"name":"dist/deep/blob.bin"}"#)["piece"] as? [String: Any])
        let data = try #require((first["data"] as? String).flatMap { Data(base64Encoded: $0) })
        #expect(data.count == 204_800 && first["from"] as? Int == 0 && first["next"] == nil, "one piece holds the 200 KiB file")
        let middle = try #require(try ask(#"{"id":3,"op":"artifact","run":1,"name":"dist/deep/blob.bin","from":204700}"#)["piece"] as? [String: Any])
        #expect((middle["data"] as? String).flatMap { Data(base64Encoded: $0) }.map(Array.init) == Array(Self.expectedBlob().suffix(100)))
        let refused = try ask(#"{"id":4,"op":"artifact","run":1,"name":"stolen"}"#)
        #expect((refused["error"] as? [String: Any])?["code"] as? String == "bad_request", "\(refused)")
        let unknown = try ask(#"{"id":5,"op":"artifacts","run":99}"#)
        #expect((unknown["error"] as? [String: Any])?["code"] as? String == "unknown_run", "\(unknown)")
    }

    @Test("a retried run keeps its last attempt's files, not the earlier attempt's")
    func retried() throws {
        let daemon = try Daemon(config: Self.config)
        #expect(try daemon.baton("run", "retried").code == 0)
        let list = try BatonJSON.artifacts(daemon, run: 1)
        #expect(list.files.map(\.name) == ["attempt-2.txt"])
        #expect(list.files.map(\.attempt) == [2])
        #expect(try daemon.baton("artifacts", "1", "attempt-2.txt").stdout == "2\n")
    }

    @Test("a cancelled run keeps what it wrote before the stop, an empty file included")
    func cancelled() throws {
        let daemon = try Daemon(config: Self.config)
        #expect(try daemon.baton("run", "stopped", "--detach").code == 0)
        // The files are written before the output line that says so.
        try Eventually.value("run 1's line that its files are written", { try daemon.baton("logs", "1").stdout }) { $0.contains("written") }
        #expect(try daemon.baton("cancel", "1").code == 0)
        #expect(try daemon.baton("artifacts", "1", "partial.log").stdout == "partial\n")
        let list = try daemon.baton("artifacts", "1", "--json").stdout
        #expect(list.contains("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "the empty file's digest: \(list)")
        let empty = daemon.directory + "/empty.out"
        #expect(try daemon.baton("artifacts", "1", "empty", "-o", empty).code == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: empty)).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: daemon.database + "-artifacts").isEmpty)
    }

    @Test("a peer who may not read the run's action may not list or fetch its artifacts")
    func deniedAsTheOutputIs() throws {
        let daemon = try Daemon(config: Self.config)
        chmod(daemon.directory, 0o755)
        #expect(try daemon.baton("run", "hidden").code == 0)
        let nobody = { (arguments: [String]) throws -> Output in
            try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.baton, "--socket", daemon.socket] + arguments)
        }
        #expect(try nobody(["logs", "1"]).code == 77)
        let list = try nobody(["artifacts", "1"])
        #expect(list.code == 77, "\(list.stdout) \(list.stderr)")
        #expect(list.stderr.contains("may not read hidden"), "\(list.stderr)")
        #expect(try nobody(["artifacts", "1", "report.txt"]).code == 77)
        #expect(try daemon.baton("artifacts", "1", "report.txt").stdout == "run 1\n")
    }

    @Test("a run as another user gets a directory of its own; a run over the bound keeps none and says so")
    func ownerAndBound() throws {
        let daemon = try Daemon(config: Self.config)
        chmod(daemon.directory, 0o755)
        let ran = try daemon.baton("run", "asNobody")
        let story = try daemon.baton("show", "1").stdout
        #expect(ran.code == 0, "\(ran.stderr) \(story)")
        #expect(try daemon.baton("artifacts", "1", "who.txt").stdout == "65534\nnobody:700\n")
        #expect(try daemon.baton("run", "tooMuch").code == 1)
        let listed = try daemon.baton("artifacts", "2")
        #expect(listed.stdout.contains("note: artifacts over 4 KiB: 4.9 KiB, none kept"), "\(listed.stdout)")
        #expect(try daemon.baton("show", "2").stdout.contains("artifacts over 4 KiB"))
        let left = try FileManager.default.contentsOfDirectory(atPath: daemon.database + "-artifacts")
        #expect(left.isEmpty, "\(left)")
    }
}

/// Artifacts across a crash of batond: what a run that dies with it leaves is removed at the next
/// start; a run adopted through its shim keeps its directory, and its files are kept at its end.
@Suite("End to end: artifacts across a crash", .serialized, .offPool)
struct ArtifactCrashTests {
    @Test("SIGKILL of batond: the next start removes a lost run's directory, keeps an adopted run's, and keeps its files at its end")
    func crash() throws {
        let scratch = NSTemporaryDirectory() + "baton-artifacts-crash-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let wait = #"echo before > \"$BATON_ARTIFACTS/before.txt\"; echo started; while [ ! -e \"$GO\" ]; do sleep 0.02; done; echo after > \"$BATON_ARTIFACTS/after.txt\""#
        let config = """
            { requireUser: false, actions: {
                adopted: { exec: ["sh", "-c", "\(wait)"], env: { GO: "\(scratch)/go" }, artifacts: { keep: "1MiB" } },
                lost: { exec: ["sh", "-c", "\(wait)"], env: { GO: "\(scratch)/go" }, artifacts: { keep: "1MiB" }, survivesRestart: false },
            } }
            """
        let daemon = try Daemon(config: config)
        for action in ["adopted", "lost"] { #expect(try daemon.baton("run", action, "--detach").code == 0) }
        let root = daemon.database + "-artifacts"
        // Both runs have written their first file before the crash.
        Eventually.until("both runs wrote before.txt") {
            FileManager.default.fileExists(atPath: root + "/1-1/before.txt") && FileManager.default.fileExists(atPath: root + "/2-1/before.txt")
        }
        // The adopted run's leader (its shim) is in the history before the crash: it is written after
        // `loading`, and a crash before it leaves a run the next start cannot tell from a stranger's
        // (recovered as lost, its directory removed: seen once under load).
        try Eventually.until("run 1's leader recorded") {
            try execute("/usr/bin/sqlite3", [daemon.database, "SELECT pgid_start IS NOT NULL FROM runs WHERE id = 1"]).stdout == "1\n"
        }
        daemon.crash()
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: root)) == ["1-1", "2-1"])

        let again = try Daemon(config: config, reusing: daemon)
        // Recovery: the lost run's directory is gone, the adopted one's is still its run's.
        #expect(try FileManager.default.contentsOfDirectory(atPath: root) == ["1-1"])
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        #expect(try again.baton("wait", "1").code == 0)
        #expect(try again.baton("artifacts", "1", "before.txt").stdout == "before\n")
        #expect(try again.baton("artifacts", "1", "after.txt").stdout == "after\n")
        #expect(try again.baton("artifacts", "2").stdout == "run 2 kept no artifacts\n")
        #expect(try FileManager.default.contentsOfDirectory(atPath: root).isEmpty)
        again.stop()
    }
}

/// `baton artifacts RUN --json`, decoded.
enum BatonJSON {
    static func artifacts(_ daemon: Daemon, run: Int64) throws -> ArtifactList {
        let out = try daemon.baton("artifacts", String(run), "--json")
        return try JSONDecoder().decode(ArtifactList.self, from: Data(out.stdout.utf8))
    }
}
