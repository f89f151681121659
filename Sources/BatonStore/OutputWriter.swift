import BatonCore

/// How a run's output becomes rows: the new chunks, the removal of tail chunks that slid out of
/// the kept window, and the run's totals, in the writer's transaction.
enum OutputWriter {
    static func write(_ write: OutputWrite, on db: Connection) throws {
        let run = DatabaseValue.integer(write.runID)
        if let before = write.removeBefore {
            try db.cached("DELETE FROM output_chunks WHERE run_id = ? AND start >= ? AND start + length(bytes) <= ?") {
                try $0.run([run, .integer(write.head), .integer(before)])
            }
        }
        for chunk in write.chunks {
            try db.cached("INSERT OR REPLACE INTO output_chunks (run_id, start, stream, at, bytes) VALUES (?, ?, ?, ?, ?)") {
                try $0.run([run, .integer(chunk.start), .integer(chunk.stream.code), .integer(chunk.at.rawValue), .blob(chunk.bytes)])
            }
        }
        try db.cached("INSERT OR REPLACE INTO output_totals (run_id, total, dropped, head) VALUES (?, ?, ?, ?)") {
            try $0.run([run, .integer(write.total), .integer(write.dropped), .integer(write.head)])
        }
    }
}
