import Foundation
import GRDB
import GRDBSQLite

/// Predicates on the library, combined with AND: case-insensitive substrings of a book's tags, and how far through
/// it the listener is.
public struct LibraryQuery: Sendable, Hashable {
    public var title: String?
    public var author: String?
    public var album: String?
    public var composer: String?
    public var genre: String?
    public var progress: Progress?
    /// The book's series, whole (case-insensitively).
    public var series: String?

    public init(title: String? = nil, author: String? = nil, album: String? = nil, composer: String? = nil, genre: String? = nil,
                progress: Progress? = nil, series: String? = nil) {
        self.series = series
        self.title = title
        self.author = author
        self.album = album
        self.composer = composer
        self.genre = genre
        self.progress = progress
    }

    public enum Property: String, Sendable, CaseIterable { case title, author, album, composer, genre }

    /// How far through a book the listener is, by its stored progress (Schema v7: how far its place is through its
    /// duration, 1 once finished): not started (its place at the very start), in progress (not finished, its place
    /// past the start), finished (marked so: by playing to the end, or by hand), unfinished (the first two).
    public enum Progress: String, Sendable, CaseIterable {
        case notStarted = "not-started", inProgress = "in-progress", finished, unfinished

        /// The condition on the book `b`.
        var condition: String {
            switch self {
            case .notStarted: "b.progress = 0 AND NOT b.finished"
            case .inProgress: "b.progress > 0 AND NOT b.finished"
            case .finished: "b.finished"
            case .unfinished: "NOT b.finished"
            }
        }
    }

    /// The predicate on `property`, nil when there is none.
    public subscript(property: Property) -> String? {
        switch property {
        case .title: title
        case .author: author
        case .album: album
        case .composer: composer
        case .genre: genre
        }
    }
}

/// Totals of a book's files.
public struct BookTotals: Sendable, Equatable {
    public var files: Int
    public var available: Int
    /// Microseconds, over the files whose duration is known.
    public var duration: Int64

    public init(files: Int, available: Int, duration: Int64) {
        self.files = files
        self.available = available
        self.duration = duration
    }
}

extension Library {
    /// The condition for one searched column: `column` contains `text`, both case-folded (``Folding``).
    static func contains(_ column: String) -> String { "instr(lectern_fold(\(column)), ?) > 0" }

    /// The books of `query` (and of a full-text search's `MATCH` when `searched`): the tables to read, `b` the book,
    /// after its row of `bookTags` when a predicate needs one (the book's and its files' values side by side, narrow to
    /// scan: Schema v7) and after its row of `bookSearch` when searched; and the condition ("1" for none).
    static func matching(_ query: LibraryQuery, searched: Bool = false) -> (from: String, condition: String, arguments: StatementArguments) {
        let predicates: [(String, LibraryQuery.Property)] = LibraryQuery.Property.allCases.compactMap { property in
            query[property].map { ($0, property) }
        }
        let conditions = predicates.map { contains($0.1 == .title ? "b.title" : "t.\($0.1.rawValue)") }
            + (query.progress.map { [$0.condition] } ?? []) + (query.series.map { _ in ["b.series = ? COLLATE NOCASE"] } ?? [])
        let condition = conditions.isEmpty ? "1" : conditions.joined(separator: " AND ")
        // The narrowest rows read first (CROSS JOIN keeps the order), each one's book looked up by its id.
        let from = switch (searched, predicates.isEmpty) {
        case (false, true): "book b"
        case (false, false): "bookTags t CROSS JOIN book b ON b.id = t.bookId"
        case (true, true): "bookSearch CROSS JOIN book b ON b.id = bookSearch.rowid"
        case (true, false): "bookSearch CROSS JOIN bookTags t ON t.bookId = bookSearch.rowid CROSS JOIN book b ON b.id = t.bookId"
        }
        return (from, condition, StatementArguments(predicates.map { Folding.fold($0.0) } + (query.series.map { [$0] } ?? [])))
    }

    /// The values of `property` among the matching books, each with how many books have it.
    public func group(_ query: LibraryQuery, by property: LibraryQuery.Property) throws -> [(value: String, books: Int)] {
        let (from, condition, arguments) = Self.matching(query)
        let sql: String
        switch property {
        case .title:
            sql = "SELECT b.title AS v, count(*) FROM \(from) WHERE \(condition) AND v IS NOT NULL GROUP BY v ORDER BY v COLLATE NOCASE"
        case .author:
            // A book without an author of its own counts under its first file's album artist or artist, by which
            // find(author:) matches it.
            sql = """
                SELECT coalesce(b.author, (SELECT coalesce(f.albumArtist, f.artist) FROM bookFile f
                                           WHERE f.bookId = b.id AND coalesce(f.albumArtist, f.artist) IS NOT NULL
                                           ORDER BY f.position LIMIT 1)) AS v, count(*)
                FROM \(from) WHERE \(condition) AND v IS NOT NULL GROUP BY v ORDER BY v COLLATE NOCASE
                """
        case .album, .composer, .genre:
            sql = """
                SELECT f.\(property.rawValue) AS v, count(DISTINCT b.id) FROM \(from) JOIN bookFile f ON f.bookId = b.id
                WHERE \(condition) AND v IS NOT NULL GROUP BY v ORDER BY v COLLATE NOCASE
                """
        }
        return try read { db in
            try Row.fetchAll(db, sql: sql, arguments: arguments).map { (value: $0[0], books: $0[1]) }
        }
    }

    /// A random book of the matching ones, with its totals.
    public func randomBook(_ query: LibraryQuery) throws -> (book: Book, totals: BookTotals)? {
        let (from, condition, arguments) = Self.matching(query)
        return try read { db in
            guard let book = try Book.fetchOne(db, sql: "SELECT b.* FROM \(from) WHERE \(condition) ORDER BY random() LIMIT 1",
                                               arguments: arguments), let id = book.id else { return nil }
            return (book, try Self.totals(db, of: [id])[id] ?? BookTotals(files: 0, available: 0, duration: 0))
        }
    }

    /// A random available file of the matching books.
    public func randomFile(_ query: LibraryQuery) throws -> BookFile? {
        let (from, condition, arguments) = Self.matching(query)
        return try read { db in
            try BookFile.fetchOne(db, sql: """
                SELECT f.* FROM \(from) JOIN bookFile f ON f.bookId = b.id WHERE \(condition) AND f.available
                ORDER BY random() LIMIT 1
                """, arguments: arguments)
        }
    }

    // MARK: - Pages, for MPRIS Playlists

    public func bookCount() throws -> Int {
        try read { db in try Book.fetchCount(db) }
    }

    /// Books of the whole library in `order` (every key the other way when `reversed`), any number of them: MPRIS
    /// Playlists' GetPlaylists, which takes its own count.
    public func books(sortedBy order: BookSort, reversed: Bool, offset: Int, limit: Int) throws -> [Book] {
        try read { db in
            try Book.read(db, sql: "SELECT * FROM book ORDER BY \(order.orderBy(reversed: reversed)) LIMIT ? OFFSET ?",
                              arguments: [max(0, limit), max(0, offset)])
        }
    }

    /// Files and total duration of each of `books`.
    public func totals(of books: [Int64]) throws -> [Int64: BookTotals] {
        try read { db in try Self.totals(db, of: books) }
    }

    /// The totals of `count` books, read from the index `bookFile_totals` alone (Schema v10).
    static func totalsSQL(_ count: Int) -> String {
        """
        SELECT bookId, count(*), sum(available), ifnull(sum(duration), 0) FROM bookFile
        WHERE bookId IN (\(Self.placeholders(count))) GROUP BY bookId
        """
    }

    static func totals(_ db: Database, of books: [Int64]) throws -> [Int64: BookTotals] {
        guard !books.isEmpty else { return [:] }
        let totals = try pages(of: books, db, totalsSQL) { statement, arguments in
            try rows(db, statement, arguments) { row in
                (sqlite3_column_int64(row, 0), BookTotals(files: Int(sqlite3_column_int64(row, 1)),
                                                          available: Int(sqlite3_column_int64(row, 2)),
                                                          duration: sqlite3_column_int64(row, 3)))
            }
        }
        return Dictionary(totals) { first, _ in first }
    }
}
