import BatonCore
import FoundationEssentials
import Glibc

/// The history's keeper of artifacts (`Migrations/0013_artifacts.sql`): a thread of its own reads
/// and digests an attempt's files and hands the writer their chunks, each its own short item (so
/// that the history's other commits go on between), then publishes them in one item: only
/// published rows are read, so a crash leaves all of an attempt's files or none. Rows a crash
/// left unpublished are removed before the first keep.
public final class StoreArtifacts: ArtifactKeeper {
    /// The bytes of one stored chunk (and one read of a file).
    static let chunk = 1 << 20
    /// The most files one attempt keeps (over it: none, said so).
    public static let maxFiles = ArtifactScan.maxFiles

    let store: Store
    private let worker: SerialWorker<@Sendable () -> Void>
    /// Tests: called on the keeper's thread after each chunk is committed (how many so far).
    let afterChunk: (@Sendable (Int) -> Void)?

    public convenience init(store: Store) { self.init(store: store, afterChunk: nil) }

    init(store: Store, afterChunk: (@Sendable (Int) -> Void)?) {
        self.store = store
        self.afterChunk = afterChunk
        worker = SerialWorker(name: "baton-artifacts", capacity: 1_000, idleTimeout: .seconds(10), state: ()) { _, batch in
            for job in batch.jobs { job() }
        }
        store.submit(Store.Item(entries: [], completion: { _ in }, refusedWhileFailing: false, work: { connection in
            try connection.execute("DELETE FROM artifacts WHERE kept = 0")
        }))
    }

    public func keep(_ found: ArtifactScan, run: Int64, attempt: Int, done: @escaping @Sendable () -> Void) {
        do {
            try worker.submit({ [self] in
                keepNow(found, run: run, attempt: attempt)
                done()
            }, bounded: false)
        } catch {
            done()
        }
    }

    /// On the keeper's thread: the rows, the chunks, the digests, then the publication. A write
    /// that fails (a full disk) ends it: nothing of this attempt is published.
    private func keepNow(_ found: ArtifactScan, run: Int64, attempt: Int) {
        var found = found
        if found.files.count > Self.maxFiles {
            found.notices.append("\(found.files.count) files, more than \(Self.maxFiles): none kept")
            found.files = []
        }
        let at = Timestamp.now
        let files = found.files
        guard case let .success(ids) = write({ connection in
            try ArtifactRows.begin(files, run: run, attempt: attempt, at: at, on: connection)
        }) else { return }
        var notices = found.notices, done: [ArtifactRows.Kept] = [], chunks = 0
        for (file, id) in zip(files, ids) {
            switch copy(file, of: found, id: id, chunks: &chunks) {
            case let .success(kept): done.append(kept)
            case let .failure(why):
                guard let notice = why.notice else { return }
                notices.append(notice)
            }
        }
        let (kept, said) = (done, notices)
        _ = write { connection in try ArtifactRows.publish(kept, notices: said, run: run, attempt: attempt, on: connection) }
    }

    typealias NotKept = ArtifactNotKept

    /// One file copied into chunk rows (`ArtifactScan.copy`), each chunk in the writer's next group.
    private func copy(_ file: ArtifactScan.File, of found: ArtifactScan, id: Int64, chunks: inout Int) -> Result<ArtifactRows.Kept, NotKept> {
        var count = chunks
        defer { chunks = count }
        return found.copy(file, chunk: Self.chunk) { bytes, start in
            guard case .success = write({ connection in
                try connection.withStatement("INSERT OR REPLACE INTO artifact_chunks (artifact_id, start, bytes) VALUES (?, ?, ?)") {
                    try $0.run([.integer(id), .integer(start), .blob(bytes)])
                }
            }) else { return false }
            count += 1
            afterChunk?(count)
            return true
        }.map { ArtifactRows.Kept(id: id, size: $0.size, sha256: $0.sha256) }
    }

    /// Runs `body` in the writer's next group and waits for its commit (this thread is the keeper's own).
    private func write<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) -> Result<T, BatonError> {
        // What `body` made is set by the work and read by the completion, both on the writer's
        // thread, the last set winning (the writer may run a group's work again after a rollback:
        // the committed attempt's value is the one that counts); the outcome is handed over once.
        let made = WriterSlot<T>(), outcome = OneShot<Result<T, BatonError>>()
        store.submit(Store.Item(entries: [], completion: { result in
            outcome.set(result.flatMap { made.value.map { .success($0) } ?? .failure(.internalError("the writer lost a result")) })
        }, refusedWhileFailing: true, work: { connection in
            made.value = try body(connection)
        }))
        return outcome.wait()
    }
}
