import BatonCore

/// A run's output in the fleet's database: how an `OutputWrite` becomes statements in the
/// writer's transaction (one per kind, whatever the number of chunks), and how any host reads
/// it back from an offset. Bytes travel as hex text (the connection speaks text only).
enum FleetOutput {
    typealias Statement = FleetJournal.Statement

    /// The statements of one write by `owner` (an incarnation): the tail chunks that slid out
    /// removed, the new chunks inserted in one statement (arrays unnested), the run's totals. Each
    /// is guarded by the owner, as a transition is: a host that lost the run writes none of it.
    static func statements(_ write: OutputWrite, owner: String) -> [Statement] {
        let run = String(write.runID)
        let owned = "EXISTS (SELECT 1 FROM runs WHERE id = $1 AND incarnation = $2)"
        var statements: [Statement] = []
        if let before = write.removeBefore {
            statements.append(("DELETE FROM output_chunks WHERE run_id = $1 AND \(owned) AND start >= $3 AND start + length(bytes) <= $4",
                               [run, owner, String(write.head), String(before)]))
        }
        if !write.chunks.isEmpty {
            // A batch tried again after a lost connection may carry chunks already committed: the same bytes.
            statements.append(("""
                INSERT INTO output_chunks (run_id, start, stream, at, bytes)
                SELECT $1, s, t, a, decode(b, 'hex') FROM unnest($3::bigint[], $4::smallint[], $5::bigint[], $6::text[]) AS c (s, t, a, b)
                WHERE \(owned)
                ON CONFLICT (run_id, start) DO UPDATE SET stream = excluded.stream, at = excluded.at, bytes = excluded.bytes
                """, [run, owner, array(write.chunks.map { String($0.start) }), array(write.chunks.map { String($0.stream.code) }),
                      array(write.chunks.map { String($0.at.rawValue) }), array(write.chunks.map { FleetJournal.hex($0.bytes) })]))
        }
        statements.append(("""
            INSERT INTO output_totals (run_id, total, dropped, head) SELECT $1, $3, $4, $5 WHERE \(owned)
            ON CONFLICT (run_id) DO UPDATE SET total = excluded.total, dropped = excluded.dropped, head = excluded.head
            """, [run, owner, String(write.total), String(write.dropped), String(write.head)]))
        return statements
    }

    /// For runs that lost chunks to a full disk: `dropped` counted from the chunks really kept.
    static func recount(_ runs: Set<Int64>) -> [Statement] {
        runs.sorted().map { run in
            ("""
                UPDATE output_totals SET dropped = total - coalesce((SELECT sum(length(bytes)) FROM output_chunks WHERE run_id = $1), 0)
                WHERE run_id = $1
                """, [String(run)])
        }
    }

    /// Tells the other hosts (their feeds) that output of these runs is written: sent at commit.
    static func notify(_ runs: Set<Int64>) -> Statement {
        ("SELECT pg_notify('\(FeedWake.outputChannel)', r::text) FROM unnest($1::bigint[]) AS r",
         [array(runs.sorted().map(String.init))])
    }

    /// The entries with every output write's chunks left out (their totals stay); the runs
    /// that lost chunks join `lossy`. What a full disk does, as on one host (`OutputShedding`).
    static func shed(_ entries: [JournalEntry], into lossy: inout Set<Int64>) -> [JournalEntry] {
        entries.map { entry in
            guard case var .outputChunks(write) = entry, !write.chunks.isEmpty else { return entry }
            lossy.insert(write.runID)
            write.chunks = []
            return .outputChunks(write)
        }
    }

    /// The run's kept output from `offset`, up to about `maxBytes` (whole chunks, the first cut at
    /// the offset); nil when the run has no output recorded.
    static func page(of run: Int64, from offset: Int64, maxBytes: Int, on db: PGConnection) throws -> OutputPage? {
        guard let totals = try db.query("SELECT total, dropped, head FROM output_totals WHERE run_id = $1", [String(run)]).first
        else { return nil }
        let offset = max(offset, 0)
        // The chunk that holds the offset starts at or before it; later ones after it. A byte
        // budget in SQL keeps a page of a big run small: chunks while the bytes before them fit.
        let rows = try db.query("""
            SELECT start, stream, at, encode(bytes, 'hex') FROM (
              SELECT start, stream, at, bytes, coalesce(sum(length(bytes)) OVER (ORDER BY start ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before
              FROM output_chunks
              WHERE run_id = $1 AND start >= coalesce((SELECT max(start) FROM output_chunks WHERE run_id = $1 AND start <= $2), 0)
            ) c WHERE before < $3 ORDER BY start
            """, [String(run), String(offset), String(max(maxBytes, 1))]).rows
        let chunks = rows.compactMap { row -> OutputChunk? in
            var chunk = Self.chunk(row)
            guard chunk.end > offset else { return nil }
            if chunk.start < offset {
                chunk.bytes.removeFirst(Int(offset - chunk.start))
                chunk.start = offset
            }
            return chunk
        }
        let number = { (i: Int) in totals[i].flatMap { Int64($0) } ?? 0 }
        return OutputPage(chunks: chunks, total: number(0), dropped: number(1), head: number(2))
    }

    static func chunk(_ row: [String?]) -> OutputChunk {
        OutputChunk(start: row[0].flatMap { Int64($0) } ?? 0, stream: StandardStream(code: row[1].flatMap { Int64($0) } ?? 1) ?? .stdout,
                    at: Timestamp(rawValue: row[2].flatMap { Int64($0) } ?? 0), bytes: unhex(row[3] ?? ""))
    }

    /// A PostgreSQL array literal of plain values (numbers, hex digits: nothing to quote).
    static func array(_ values: [String]) -> String { "{" + values.joined(separator: ",") + "}" }

    /// Bytes from hex digits (as `encode(…, 'hex')` gives them).
    static func unhex(_ text: String) -> [UInt8] {
        func value(_ digit: UInt8) -> UInt8 {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: 0
            }
        }
        let digits = Array(text.utf8)
        var bytes = [UInt8]()
        bytes.reserveCapacity(digits.count / 2)
        var i = 0
        while i + 1 < digits.count {
            bytes.append(value(digits[i]) << 4 | value(digits[i + 1]))
            i += 2
        }
        return bytes
    }
}
