import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Secret params across a fleet (issue 42, item 3): every host hashes a secret's value under the
/// one key each holds (`secretsKey`), so equal values meet in one key on any host; the value stays
/// in the memory of the host the trigger came to, which starts its run with it; PostgreSQL holds
/// none of it.
@Suite("End to end: secret params across a fleet", .serialized, .offPool)
struct FleetSecretTests {
    @Test("web-2's trigger with web-1's value follows web-1's run (one key), and starts on web-2 with it; another value runs beside; no value in PostgreSQL")
    func sharedKey() throws {
        let directory = NSTemporaryDirectory() + "baton-fleet-secret-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let key = directory + "/secrets.key"
        #expect(FileManager.default.createFile(atPath: key, contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }),
                                               attributes: [.posixPermissions: 0o600]))
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            deploy: { exec: ["sh", "-c", "printf %s \\"$BATON_PARAM_TOKEN\\" > \\"$DIR/seen-$BATON_RUN_ID\\"; echo token $BATON_PARAM_TOKEN; while [ ! -e \\"$DIR/go\\" ]; do sleep 0.02; done"],
                      env: { DIR: "\(directory)" }, params: { token: { secret: true } }, keyParams: ["token"], policy: "queue" },
            """, conninfo: conninfo, settings: #"requireUser: false, secretsKey: "\#(key)","#)
        let planted = "plant-" + UUID().uuidString.lowercased(), other = "other-" + UUID().uuidString.lowercased()
        let trigger = { (host: Int, token: String) in
            try Client(path: hosts[host].socket).call(Request(op: .trigger, action: "deploy", params: ["token": token], detach: true))
        }
        let first = try #require(try trigger(0, planted).run)
        let second = try trigger(1, planted)
        #expect(second.decision == .followUp && second.run?.key == first.key, "one key on both hosts: \(String(describing: second.run))")
        let beside = try #require(try trigger(1, other).run)
        #expect(beside.key != first.key)
        // Every run waits for this file (the first holds its key meanwhile, so the second follows it).
        #expect(FileManager.default.createFile(atPath: directory + "/go", contents: nil))
        for (host, run) in [(0, first.id), (1, second.run?.id ?? 0), (1, beside.id)] {
            #expect(try FleetTests.wait(hosts[host], run: run)?.phase == .success, "run \(run)")
        }
        let seen = { (run: Int64) in String(decoding: FileManager.default.contents(atPath: "\(directory)/seen-\(run)") ?? Data(), as: UTF8.self) }
        #expect(seen(first.id) == planted && seen(second.run?.id ?? 0) == planted && seen(beside.id) == other)
        #expect(try hosts[0].baton("logs", String(second.run?.id ?? 0)).stdout == "token ***\n")
        let db = try PGConnection(conninfo)
        for (table, column) in [("runs", "params || key || coalesce(error, '')"), ("triggers", "params || key"), ("transitions", "coalesce(detail, '')"),
                                ("outputs", "encode(tail, 'escape')"), ("output_chunks", "encode(bytes, 'escape')")] {
            let found = try db.query("SELECT count(*) FROM \(table) WHERE \(column) LIKE '%' || $1 || '%' OR \(column) LIKE '%' || $2 || '%'",
                                     [planted, other]).first?[0]
            #expect(found == "0", "\(table) holds a secret's value")
        }
        for host in hosts { host.stop() }
    }
}
