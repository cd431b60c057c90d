import Foundation
import GRDB

/// The orders of a listing, each in the direction a reader expects: titles and authors from A, the books played,
/// added or changed most recently first, the furthest read first, the user's order. MPRIS Playlists' orderings are
/// some of these, in either direction (``mprisOrderings``).
public enum BookSort: String, Sendable, CaseIterable {
    /// By title, case-insensitively (ASCII letters: SQLite's NOCASE, which the index uses).
    case title
    /// By author (books without one last), then title.
    case author
    /// The most recently played first; books never played last.
    case played
    /// The most recently added first.
    case added
    /// The furthest through first (finished books count as read to the end); unstarted books last.
    case progress
    /// The most recently changed first (renamed, moved, its files or note changed).
    case modified
    /// The user's order of the books (the order they were first added in, until something reorders them).
    case user
    /// By series (books without one last), in the order of their parts (as numbers: 2 before 2.5 before 10; books without
    /// a part last), then title.
    case series

    /// The listing's ORDER BY on `book` (or `reversed`, every key the other way), each read in an index (Schema v2
    /// and v7); its columns named as of `table` when given (the alias of `book` in a join).
    public func orderBy(reversed: Bool = false, of table: String? = nil) -> String {
        let t = table.map { $0 + "." } ?? ""
        let keys: [(String, descending: Bool)] = switch self {
        case .title: [("\(t)title COLLATE NOCASE", false), ("\(t)id", false)]
        case .author: [("\(t)author IS NULL", false), ("\(t)author COLLATE NOCASE", false), ("\(t)title COLLATE NOCASE", false),
                       ("\(t)id", false)]
        case .played: [("\(t)lastPlayedAt IS NOT NULL", true), ("\(t)lastPlayedAt", true), ("\(t)id", true)]
        case .added: [("\(t)addedAt", true), ("\(t)id", true)]
        case .progress: [("\(t)progress", true), ("\(t)id", true)]
        case .modified: [("\(t)modifiedAt", true), ("\(t)id", true)]
        case .user: [("\(t)userOrder", false), ("\(t)id", false)]
        case .series: [("\(t)series IS NULL", false), ("\(t)series COLLATE NOCASE", false), ("\(t)seriesPart IS NULL", false),
                       ("CAST(\(t)seriesPart AS REAL)", false),
                       ("\(t)seriesPart COLLATE NOCASE", false), ("\(t)title COLLATE NOCASE", false), ("\(t)id", false)]
        }
        return keys.map { $0.0 + ($0.descending != reversed ? " DESC" : "") }.joined(separator: ", ")
    }

    /// MPRIS Playlists' orderings (`Playlist_Ordering`), by name, each the order GetPlaylists gives without
    /// ReverseOrder, ascending (A first, the oldest first): `sort`, or `sort` reversed (for
    /// ``Library/books(sortedBy:reversed:offset:limit:)``).
    public static let mprisOrderings: [(name: String, sort: BookSort, reversed: Bool)] = [
        ("Alphabetical", .title, false), ("Created", .added, true), ("Modified", .modified, true),
        ("Played", .played, true), ("User", .user, false),
    ]
}

/// One page of a listing or search, and how many books there are in all.
public struct BookPage: Sendable, Equatable {
    public var books: [Book]
    /// Every book of the listing or search, on every page.
    public var total: Int
    /// The files and duration of each book of the page, read with it.
    public var totals: [Int64: BookTotals]

    public init(books: [Book], total: Int, totals: [Int64: BookTotals] = [:]) {
        self.books = books
        self.total = total
        self.totals = totals
    }
}

// Listings and searches a page at a time, sorted (or ranked) and cut by the database: no reply holds more than a page.
extension Library {
    /// The most books a page may have.
    public static let maximumPageSize = 200
    /// The page of the calls that take no size (Library1's ListBooks and Find).
    public static let defaultPageSize = 100
    /// The columns of `bookSearch` (Schema v7), in order.
    static let searchColumns = ["title", "author", "narrator", "series", "album", "composer", "genre", "files", "notes"]
    /// Ranks of a search's columns (bm25 weights, in the order of ``searchColumns``): a word in the title counts most,
    /// then the people, the series and album, then the files' other tags and the notes.
    static let searchWeights = [10.0, 6.0, 6.0, 4.0, 3.0, 2.0, 1.0, 1.0, 1.0]

    /// A page of the books on a shelf (nil = the top level; with `recursive`, and the shelves below it: nil and
    /// recursive is every book) that match `query`, in `order`.
    public func books(in shelf: Int64?, recursive: Bool, matching query: LibraryQuery = LibraryQuery(), sortedBy order: BookSort,
                      offset: Int, limit: Int) throws -> BookPage {
        try Self.checkPage(offset: offset, limit: limit)
        return try read { db in
            let (from, condition, arguments) = try Self.matching(query, in: shelf, recursive: recursive, db)
            // A shelf's SQL has a parameter for each shelf below it: made again at each call.
            let books = try Book.read(db, sql: """
                SELECT b.* FROM \(from) WHERE \(condition) ORDER BY \(order.orderBy(of: "b")) LIMIT ? OFFSET ?
                """, arguments: arguments + [limit, offset], kept: shelf == nil)
            return try Self.page(db, books, offset: offset, limit: limit) {
                try Self.count(db, from: from, where: condition, arguments, kept: shelf == nil)
            }
        }
    }

    /// ``matching(_:searched:)`` of the books on a shelf (nil = the top level), and on the shelves below it when
    /// `recursive`: nil and recursive is every book. NotFound for a shelf that does not exist.
    static func matching(_ query: LibraryQuery, in shelf: Int64?, recursive: Bool, _ db: Database) throws
        -> (from: String, condition: String, arguments: StatementArguments) {
        let (from, condition, arguments) = matching(query)
        var onShelves: String?
        var shelves: [Int64] = []
        if let shelf {
            _ = try existingShelf(db, shelf)
            shelves = recursive ? try descendantShelves(db, of: shelf) + [shelf] : [shelf]
            onShelves = "b.shelfId IN (\(placeholders(shelves.count)))"
        } else if !recursive {
            onShelves = "b.shelfId IS NULL"
        }
        guard let onShelves else { return (from, condition, arguments) }
        return (from, condition == "1" ? onShelves : "\(onShelves) AND \(condition)", StatementArguments(shelves) + arguments)
    }

    /// A page of the books whose title, authors, narrator, shelves (series), albums, files' tags, note or
    /// bookmarks hold every word of `text`, each word as the start of a word there, case and accents folded
    /// ("bront eyr" finds "Jane Eyre" by Charlotte Brontë), and which match `query` too; the best matches first, then
    /// by title (``rank(_:_:on:)``). An empty `text` leaves `query` alone, by title.
    public func search(_ text: String, _ query: LibraryQuery = LibraryQuery(), offset: Int, limit: Int) throws -> BookPage {
        try search(text, query, offset: offset, limit: limit, rankingAtMost: Self.rankedMatches)
    }

    /// ``search(_:_:offset:limit:)``, bm25 ranking at most `rankingAtMost` matches (tests make it small).
    func search(_ text: String, _ query: LibraryQuery, offset: Int, limit: Int, rankingAtMost: Int) throws -> BookPage {
        try Self.checkPage(offset: offset, limit: limit)
        guard text.unicodeScalars.count <= Limits.name else {
            throw LibraryError.invalidArgument("the search text is longer than \(Limits.name) characters")
        }
        guard let pattern = Self.searchPattern(text) else {
            if !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                throw LibraryError.invalidArgument("the search text has no letters or digits to look for")
            }
            // No text: the matches of `query`, in the title's index.
            let (from, condition, arguments) = Self.matching(query)
            return try read { db in
                let books = try Book.read(db, sql: """
                    SELECT b.* FROM \(from) WHERE \(condition) ORDER BY b.title COLLATE NOCASE, b.id LIMIT ? OFFSET ?
                    """, arguments: arguments + [limit, offset])
                return try Self.page(db, books, offset: offset, limit: limit) {
                    try Self.count(db, from: from, where: condition, arguments)
                }
            }
        }
        return try read { db in
            // Ranked without the books' progress, which the index does not follow (a ranking is kept while the index
            // is unchanged); the books of that progress kept after, in the order of the ranking.
            var indexed = query
            indexed.progress = nil
            var ranked = try rankedSearch(db, SearchKey(pattern: pattern, query: indexed, rankingAtMost: rankingAtMost))
            if let progress = query.progress {
                let books = Set(try Self.ids(db, "SELECT b.id FROM book b WHERE \(progress.condition)"))
                ranked = ranked.filter(books.contains)
            }
            let ids = Array(ranked.dropFirst(offset).prefix(limit))
            return BookPage(books: try Self.books(db, ids), total: ranked.count, totals: try Self.totals(db, of: ids))
        }
    }

    /// The books whose ids are `ids`, in that order.
    static func books(_ db: Database, _ ids: [Int64]) throws -> [Book] {
        guard !ids.isEmpty else { return [] }
        let found = try Self.pages(of: ids, db, { "SELECT * FROM book WHERE id IN (\(Self.placeholders($0)))" }) {
            try Book.read(db, $0, arguments: $1)
        }
        let byID = Dictionary(found.map { ($0.id ?? 0, $0) }) { first, _ in first }
        return ids.compactMap { byID[$0] }
    }

    /// The page of `books`, with their totals and how many books the listing has: known without counting them when
    /// the page is neither full nor past the end.
    static func page(_ db: Database, _ books: [Book], offset: Int, limit: Int, counting: () throws -> Int) throws -> BookPage {
        let total = books.count == limit || books.isEmpty && offset > 0 ? try counting() : offset + books.count
        return BookPage(books: books, total: total, totals: try totals(db, of: books.compactMap(\.id)))
    }

    /// How many rows of `from` `condition` holds for: without a WHERE when it is "1", as SQLite counts a table's rows
    /// without stepping through them only then. The statement `kept` for the next call, as ``Book/read(_:sql:arguments:kept:)``.
    static func count(_ db: Database, from: String, where condition: String, _ arguments: StatementArguments,
                      kept: Bool = true) throws -> Int {
        let sql = "SELECT count(*) FROM \(from)" + (condition == "1" ? "" : " WHERE \(condition)")
        return try Int.fetchOne(statement(db, sql, kept: kept), arguments: arguments) ?? 0
    }

    /// The FTS5 query for `text`: each word (split at white space) quoted, as a prefix, all of them required; nil when
    /// no word has a letter or a digit. A word the tokenizer splits ("o'brien") is a phrase whose last part is the prefix.
    static func searchPattern(_ text: String) -> String? {
        let words = text.split(whereSeparator: { $0.isWhitespace })
            .filter { $0.unicodeScalars.contains { CharacterSet.alphanumerics.contains($0) } }
        guard !words.isEmpty else { return nil }
        return words.map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"*" }.joined(separator: " AND ")
    }

    /// "?,?,?": the parameters of an `IN (…)` of `count` values.
    static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ",")
    }

    static func checkPage(offset: Int, limit: Int) throws {
        guard offset >= 0 else { throw LibraryError.invalidArgument("the offset can't be negative") }
        guard (1...maximumPageSize).contains(limit) else {
            throw LibraryError.invalidArgument("a page holds 1 to \(maximumPageSize) books, not \(limit)")
        }
    }
}
