import Foundation
import GRDB

/// A stretch of listening to one book at one speed, as stored (the daemon's SessionTracker decides them).
/// Positions and times in microseconds.
public struct ListenedSession: Sendable, Equatable {
    public var id: Int64?
    /// nil once the book was deleted; its title stays.
    public var bookId: Int64?
    public var title: String
    public var startedAt: Date
    public var endedAt: Date
    /// The stretch of the book heard, from its start in book order.
    public var fromPosition: Int64
    public var toPosition: Int64
    /// Wall-clock time spent listening, and book time heard in it.
    public var listened: Int64
    public var content: Int64
    public var speed: Double
    /// Listening time skip silence saved (the pauses heard shorter); the speed saved the rest of content − listened.
    public var silence: Int64

    public init(id: Int64? = nil, bookId: Int64?, title: String = "", startedAt: Date, endedAt: Date, fromPosition: Int64,
                toPosition: Int64, listened: Int64, content: Int64, speed: Double, silence: Int64 = 0) {
        self.id = id
        self.bookId = bookId
        self.title = title
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.fromPosition = fromPosition
        self.toPosition = toPosition
        self.listened = listened
        self.content = content
        self.speed = speed
        self.silence = silence
    }
}

/// A place on a book's undo stack: where the listener was before a move.
public struct UndoEntry: Sendable, Equatable {
    public var id: Int64
    /// The book whose stack it is on.
    public var bookId: Int64
    /// The book of the place: another one for a book change.
    public var placeBookId: Int64
    public var fileId: Int64
    public var offset: Int64
    /// seek, chapter, jump, bookmark or book.
    public var kind: String
    public var createdAt: Date
}

/// Listening figures over a span of time (µs): what `lectern stats` shows.
public struct ListeningStats: Sendable, Equatable {
    public struct Total: Sendable, Equatable {
        /// A day ("yyyy-MM-dd", local time), a book's id or a shelf's id (nil: no book any more, no shelf).
        public var key: String
        public var id: Int64?
        /// The book's title or the shelf's name ("" for none).
        public var name: String
        public var listened: Int64
        public var content: Int64
        /// Listening time skip silence saved.
        public var silence: Int64

        /// What listening faster than 1 saved: the book time heard beyond the time spent and the silence skipped
        /// (negative when slower).
        public var savedBySpeed: Int64 { content - listened - silence }
    }

    public struct Finished: Sendable, Equatable {
        public var bookId: Int64?
        public var title: String
        public var finishedAt: Date
    }

    public var listened: Int64 = 0
    public var content: Int64 = 0
    /// Listening time skip silence saved.
    public var savedBySilence: Int64 = 0
    /// Per day, oldest first; per book and per shelf (a shelf counts the books of the shelves below it), most first.
    public var days: [Total] = []
    public var books: [Total] = []
    public var shelves: [Total] = []
    public var finished: [Finished] = []

    /// Book time heard beyond the time spent and the silence skipped: what listening faster than 1 saved (negative
    /// when slower). With ``savedBySilence``, all that `content` exceeds `listened` by.
    public var savedBySpeed: Int64 { content - listened - savedBySilence }
}

// The listening history, finished books and the undo stacks (v10).
extension Library {
    /// How many places each book's undo stack keeps: older ones are dropped.
    public static let undoDepth = 20

    // MARK: - Sessions

    /// Stores a new session (its book's title with it); returns its id.
    public func insertSession(_ session: ListenedSession) throws -> Int64 {
        try write { db in
            try db.execute(sql: """
                INSERT INTO listeningSession(bookId, title, startedAt, endedAt, fromPosition, toPosition, listened, content, speed,
                  silence)
                SELECT id, title, ?, ?, ?, ?, ?, ?, ?, ? FROM book WHERE id = ?
                """, arguments: StatementArguments(Self.sessionValues(session)) + [session.bookId])
            guard db.changesCount > 0 else { throw LibraryError.notFound("no book \(session.bookId ?? 0)") }
            return db.lastInsertedRowID
        }
    }

    /// Updates what grows of a stored session (its end, the part heard, the times; its start, book and speed stay): at
    /// each of the player's ticks while it plays, one cached statement in SQLite's own transaction, as positions are
    /// saved, that changes no indexed column.
    public func updateSession(_ session: ListenedSession) throws {
        guard let id = session.id else { return }
        try write(transaction: false) { db in
            let statement = try db.cachedStatement(sql: """
                UPDATE listeningSession SET endedAt = max(startedAt, ?), fromPosition = ?, toPosition = ?, listened = ?, content = ?,
                  silence = ?
                WHERE id = ?
                """)
            let values = Self.sessionValues(session)
            try statement.execute(arguments: StatementArguments(Array(values[1...5]) + [values[7], id]))
        }
    }

    /// startedAt, endedAt, fromPosition, toPosition, listened, content, speed, silence, as the schema's checks allow
    /// them.
    private static func sessionValues(_ s: ListenedSession) -> [any DatabaseValueConvertible] {
        [StoredDate.text(s.startedAt), StoredDate.text(max(s.startedAt, s.endedAt)), max(0, s.fromPosition),
         max(s.fromPosition, s.toPosition, 0), max(0, s.listened), max(0, s.content), min(max(s.speed, 0.5), 3),
         max(0, s.silence)]
    }

    /// The sessions that started in `from ..< to` (nil: no bound), of one book or all, oldest first.
    public func sessions(of book: Int64? = nil, from: Date? = nil, to: Date? = nil) throws -> [ListenedSession] {
        try read { db in
            if let book { _ = try Self.existingBook(db, book) }
            let (range, arguments) = Self.span(from: from, to: to)
            let rows = try Row.fetchAll(db, sql: """
                SELECT * FROM listeningSession WHERE \(range) \(book == nil ? "" : "AND bookId = ?") ORDER BY startedAt, id
                """, arguments: arguments + (book.map { [$0] } ?? []))
            return rows.map { row in
                ListenedSession(id: row["id"], bookId: row["bookId"], title: row["title"],
                                startedAt: StoredDate.date(row["startedAt"]) ?? Date(timeIntervalSince1970: 0),
                                endedAt: StoredDate.date(row["endedAt"]) ?? Date(timeIntervalSince1970: 0),
                                fromPosition: row["fromPosition"], toPosition: row["toPosition"], listened: row["listened"],
                                content: row["content"], speed: row["speed"], silence: row["silence"])
            }
        }
    }

    /// The SQL condition on `startedAt` for `from ..< to`, and its arguments.
    private static func span(from: Date?, to: Date?, column: String = "startedAt") -> (String, StatementArguments) {
        ("\(column) >= ? AND \(column) < ?", [StoredDate.text(from ?? .distantPast), StoredDate.text(to ?? .distantFuture)])
    }

    // MARK: - Statistics

    /// Time listened and heard in `from ..< to` (sessions by the moment they started, days in local time), per day, book
    /// and shelf, and the books finished then.
    public func listeningStats(from: Date? = nil, to: Date? = nil) throws -> ListeningStats {
        try read { db in
            let (range, arguments) = Self.span(from: from, to: to)
            func totals(_ sql: String) throws -> [ListeningStats.Total] {
                try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
                    ListeningStats.Total(key: row["key"], id: row["id"], name: row["name"] ?? "", listened: row["listened"],
                                         content: row["content"], silence: row["silence"])
                }
            }
            var stats = ListeningStats()
            let sums = try Row.fetchOne(db, sql: """
                SELECT total(listened) AS listened, total(content) AS content, total(silence) AS silence
                FROM listeningSession WHERE \(range)
                """, arguments: arguments)
            stats.listened = Int64((sums?["listened"] as Double?) ?? 0)
            stats.content = Int64((sums?["content"] as Double?) ?? 0)
            stats.savedBySilence = Int64((sums?["silence"] as Double?) ?? 0)
            stats.days = try totals("""
                SELECT date(startedAt, 'localtime') AS key, NULL AS id, date(startedAt, 'localtime') AS name,
                  sum(listened) AS listened, sum(content) AS content, sum(silence) AS silence
                FROM listeningSession WHERE \(range) GROUP BY key ORDER BY key
                """)
            stats.books = try totals("""
                SELECT ifnull(bookId, '') || ':' || title AS key, bookId AS id, title AS name, sum(listened) AS listened,
                  sum(content) AS content, sum(silence) AS silence
                FROM listeningSession WHERE \(range) GROUP BY bookId, title ORDER BY listened DESC, name
                """)
            stats.shelves = try totals("""
                SELECT CAST(ifnull(shelfTree.top, '') AS TEXT) AS key, shelfTree.top AS id, ifnull(shelf.name, '') AS name,
                  sum(listened) AS listened, sum(content) AS content, sum(silence) AS silence
                FROM listeningSession
                LEFT JOIN book ON book.id = listeningSession.bookId
                LEFT JOIN shelfTree ON shelfTree.id = book.shelfId
                LEFT JOIN shelf ON shelf.id = shelfTree.top
                WHERE \(range) GROUP BY shelfTree.top ORDER BY listened DESC, name
                """)
            let (finishedRange, finishedArguments) = Self.span(from: from, to: to, column: "finishedAt")
            stats.finished = try Row.fetchAll(db, sql: "SELECT * FROM finishedBook WHERE \(finishedRange) ORDER BY finishedAt",
                                              arguments: finishedArguments).map { row in
                ListeningStats.Finished(bookId: row["bookId"], title: row["title"],
                                        finishedAt: StoredDate.date(row["finishedAt"]) ?? Date(timeIntervalSince1970: 0))
            }
            return stats
        }
    }

    // MARK: - Undo

    /// Puts a place on `book`'s undo stack (`placeBook`'s file `file` at `offset`), keeping the newest ``undoDepth``.
    public func pushUndo(on book: Int64, placeBook: Int64, file: Int64, offset: Int64, kind: String, at date: Date = Date()) throws {
        try write { db in
            try db.execute(sql: """
                INSERT INTO undoEntry(bookId, placeBookId, fileId, offset, kind, createdAt) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [book, placeBook, file, max(0, offset), kind, StoredDate.text(date)])
            try db.execute(sql: """
                DELETE FROM undoEntry WHERE bookId = ?1
                  AND id NOT IN (SELECT id FROM undoEntry WHERE bookId = ?1 ORDER BY id DESC LIMIT ?2)
                """, arguments: [book, Self.undoDepth])
        }
    }

    /// Takes the newest place off `book`'s undo stack; nil when it is empty.
    public func popUndo(of book: Int64) throws -> UndoEntry? {
        try write { db in
            guard let entry = try Self.undoEntries(db, of: book, limit: 1).first else { return nil }
            try db.execute(sql: "DELETE FROM undoEntry WHERE id = ?", arguments: [entry.id])
            return entry
        }
    }

    /// `book`'s undo stack, newest first.
    public func undoEntries(of book: Int64) throws -> [UndoEntry] {
        try read { db in
            _ = try Self.existingBook(db, book)
            return try Self.undoEntries(db, of: book, limit: Self.undoDepth)
        }
    }

    private static func undoEntries(_ db: Database, of book: Int64, limit: Int) throws -> [UndoEntry] {
        try Row.fetchAll(db, sql: "SELECT * FROM undoEntry WHERE bookId = ? ORDER BY id DESC LIMIT ?", arguments: [book, limit]).map { row in
            UndoEntry(id: row["id"], bookId: row["bookId"], placeBookId: row["placeBookId"], fileId: row["fileId"],
                      offset: row["offset"], kind: row["kind"], createdAt: StoredDate.date(row["createdAt"]) ?? Date(timeIntervalSince1970: 0))
        }
    }
}
