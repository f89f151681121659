@testable import BatonFleet
import CLibPQ
import Glibc
import Testing

/// libpq opened by name at run time: every function BatonFleet calls is found, and a library that
/// is missing is an error naming it and the package that brings it.
@Suite("LibPQ: libpq opened with dlopen, not linked")
struct LibPQTests {
    @Test("libpq.so.5 opens and gives every function: a call through the table reaches libpq")
    func opens() throws {
        let pq = try LibPQ.open(LibPQ.library).get()
        // A call through the table: a connection string libpq refuses to parse is its own error, no server needed.
        let keywords: [UnsafePointer<CChar>?] = [UnsafePointer(strdup("dbname")), nil]
        let values: [UnsafePointer<CChar>?] = [UnsafePointer(strdup("host=/nonexistent-baton-dir port=1 connect_timeout=1")), nil]
        let connection = try #require(pq.PQconnectdbParams(keywords, values, 1))
        defer { pq.PQfinish(connection) }
        #expect(pq.PQstatus(connection) == CONNECTION_BAD)
        #expect(String(cString: pq.PQerrorMessage(connection)!).contains("nonexistent-baton-dir"))
    }

    @Test("a library that cannot be opened: the error names it, says why, and names Debian's package")
    func missing() {
        let result = LibPQ.open("libpq-baton-missing.so.5")
        guard case let .failure(error) = result else {
            Issue.record("a missing library opened")
            return
        }
        #expect(error.message.hasPrefix("a fleet needs PostgreSQL's client library libpq-baton-missing.so.5, which cannot be loaded: "))
        #expect(error.message.contains("No such file") && error.message.hasSuffix("(Debian's package libpq5 installs it)"), "\(error.message)")
        #expect(!error.isConnectionProblem, "not retried as a server that does not answer")
    }
}
