import Foundation
import GRDB

/// A full-text search as it is ranked: the FTS5 query of its text, the Find keys with it, and how many matches
/// bm25 ranks at most.
struct SearchKey: Hashable, Sendable {
    var pattern: String
    var query: LibraryQuery
    var rankingAtMost: Int
}

/// The ranked ids of the last searches, each kept while the index is the one it was ranked on: the next pages of a
/// search are cut from it instead of ranking every match again.
struct SearchRankings: Sendable {
    /// The most recent first.
    private var kept: [(key: SearchKey, index: Data, ids: [Int64])] = []
    /// Searches kept: a few, each at most one id per book (80 KB at 10,000 books).
    static let capacity = 4

    /// The ids of `key` ranked on `index` (the index's structure record), nil when not kept.
    mutating func ids(of key: SearchKey, on index: Data) -> [Int64]? {
        guard let found = kept.firstIndex(where: { $0.key == key && $0.index == index }) else { return nil }
        let entry = kept.remove(at: found)
        kept.insert(entry, at: 0)
        return entry.ids
    }

    mutating func keep(_ ids: [Int64], of key: SearchKey, on index: Data) {
        kept.removeAll { $0.key == key }
        kept.insert((key, index, ids), at: 0)
        if kept.count > Self.capacity { kept.removeLast() }
    }
}

// The order of a full-text search: bm25 for up to `rankedMatches` matches, tiers of columns past that.
extension Library {
    /// The most matches a search ranks by bm25; more are ranked by tiers of columns
    /// (``rankByColumns(_:_:total:)``). bm25 costs about a microsecond a match.
    static let rankedMatches = 1_000

    /// The ids of every match of `key`, best first: kept from an earlier call while the index is unchanged (its
    /// structure record, `bookSearch_data` row 10, changes with every write to the index, and a book's title, its
    /// tags of `bookTags` and its existence change the index with it).
    func rankedSearch(_ db: Database, _ key: SearchKey) throws -> [Int64] {
        let index = try Data.fetchOne(db, sql: "SELECT block FROM bookSearch_data WHERE id = 10") ?? Data()
        if let ids = rankings.withLock({ $0.ids(of: key, on: index) }) { return ids }
        let ids = try Self.rank(db, key)
        rankings.withLock { $0.keep(ids, of: key, on: index) }
        return ids
    }

    /// Every match of `key`, ranked: by bm25 (a word in the title counting most: ``searchWeights``), then by title,
    /// when they are few; by tiers of columns past `key.rankingAtMost`.
    static func rank(_ db: Database, _ key: SearchKey) throws -> [Int64] {
        let total = try count(db, key.pattern, key.query)
        guard total > key.rankingAtMost else {
            let (from, condition, arguments) = matching(key.query, searched: true)
            return try Int64.fetchAll(db, sql: """
                SELECT b.id FROM \(from) WHERE bookSearch MATCH ? AND \(condition)
                ORDER BY bm25(bookSearch, \(searchWeights.map { "\($0)" }.joined(separator: ", "))), b.title COLLATE NOCASE, b.id
                """, arguments: [key.pattern] + arguments)
        }
        return try rankByColumns(db, key, total: total)
    }

    /// Many matches ranked by the weakest of their words' best columns: first the books with every word in the title,
    /// then with every word in the title or the people's names, then adding the series, the album, the composers,
    /// then the rest (``searchWeights``' columns, heaviest first); each tier by title.
    ///
    /// bm25 for every match would cost about a microsecond each (12 ms for a word of every book at 10,000 books). And
    /// ranks little past half the library: a word in more than half of the books has an IDF clamped to 1e-6 by FTS5,
    /// so when every match holds only such words (as when more than half the books match) bm25 orders them by which
    /// columns hold the words (weighted), how often and how long the book's text is. The tiers keep the first.
    static func rankByColumns(_ db: Database, _ key: SearchKey, total: Int) throws -> [Int64] {
        let (_, condition, arguments) = matching(key.query)
        let tags = key.query != LibraryQuery() ? " CROSS JOIN bookTags t ON t.bookId = b.id" : ""
        var ids: [Int64] = []
        var above: (pattern: String, count: Int)?
        for columns in tierColumns {
            let pattern = columns.map { "{\($0.joined(separator: " "))} : (\(key.pattern))" } ?? key.pattern
            let count = columns == nil ? total : try Self.count(db, pattern, key.query)
            let size = count - (above?.count ?? 0)
            if size > 0 {
                let tier = above.map { $0.count > 0 ? "\(pattern) NOT \($0.pattern)" : pattern } ?? pattern
                // A large tier read in the order of the title's index, a small one sorted.
                let order = size > rankedMatches ? " INDEXED BY book_title" : ""
                ids += try Int64.fetchAll(db, sql: """
                    SELECT b.id FROM book b\(order)\(tags)
                    WHERE b.id IN (SELECT rowid FROM bookSearch WHERE bookSearch MATCH ?) AND \(condition)
                    ORDER BY b.title COLLATE NOCASE, b.id
                    """, arguments: [tier] + arguments)
            }
            if count == total { break }
            above = (pattern, count)
        }
        return ids
    }

    /// The columns of each tier of ``rankByColumns(_:_:total:)``: those of each weight of ``searchWeights`` and the
    /// heavier ones; nil, the last, is every column.
    static let tierColumns: [[String]?] = {
        let weights = Set(searchWeights).sorted(by: >)
        return weights.dropLast().map { weight in
            zip(searchColumns, searchWeights).filter { $0.1 >= weight }.map(\.0)
        } + [nil]
    }()

    /// The books that match the FTS5 query `pattern` and `query`.
    static func count(_ db: Database, _ pattern: String, _ query: LibraryQuery) throws -> Int {
        let (from, condition, arguments) = matching(query, searched: true)
        // The index's matches alone when no predicate needs the books.
        let counted = query != LibraryQuery() ? from : "bookSearch"
        return try Int.fetchOne(db, sql: "SELECT count(*) FROM \(counted) WHERE bookSearch MATCH ? AND \(condition)",
                                arguments: [pattern] + arguments) ?? 0
    }
}
