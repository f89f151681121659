import BatonCore

/// What a full disk does to output: the chunks waiting are not kept (a run is never failed for
/// its output, and its transitions must not wait behind it), and from then on the run's
/// `dropped` is counted from the chunks the history really has.
enum OutputShedding {
    /// The item with every output write's chunks left out (their totals stay, to be written when
    /// space returns); the runs that lost chunks join `lossy`.
    static func shed(_ item: Store.Item, into lossy: inout Set<Int64>) -> Store.Item {
        var item = item
        item.entries = item.entries.map { entry in
            guard case var .outputChunks(write) = entry, !write.chunks.isEmpty else { return entry }
            lossy.insert(write.runID)
            write.chunks = []
            return .outputChunks(write)
        }
        return item
    }

    /// For each lossy run the batch wrote output of: `dropped` is every byte written that the
    /// history does not have (the window's own drops and the chunks a full disk cost).
    static func recount(_ batch: [Store.Item], lossy: Set<Int64>, on db: Connection) throws {
        guard !lossy.isEmpty else { return }
        var runs = Set<Int64>()
        for item in batch {
            for case let .outputChunks(write) in item.entries where lossy.contains(write.runID) { runs.insert(write.runID) }
        }
        for run in runs.sorted() {
            try db.cached("""
                UPDATE output_totals SET dropped = total - coalesce((SELECT sum(length(bytes)) FROM output_chunks WHERE run_id = ?1), 0)
                WHERE run_id = ?1
                """) { try $0.run([.integer(run)]) }
        }
    }
}
