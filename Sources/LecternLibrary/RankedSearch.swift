import Foundation
import GRDB
import GRDBSQLite

/// A full-text search as it is ranked: the FTS5 query of its text, the Find keys with it (but the progress, which
/// the index does not follow: ``Library/search(_:_:offset:limit:)`` keeps those books after), and how many matches
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

    /// Every book by title, read on the index it was kept with: a title, and a book added or deleted, change the index.
    var byTitle: (index: Data, order: TitleOrder)?
}

/// Every book's id by title (as ``BookSort/title`` lists them), and each id's place in that order: what puts many
/// matches of a search in title order without sorting them.
struct TitleOrder: Sendable {
    /// Every book's id, by title.
    let ids: [Int64]
    /// The same ids in ascending order, each with its place in `ids`.
    private let ascending: [Int64]
    private let places: [Int32]

    init(_ ids: [Int64]) {
        self.ids = ids
        let order = ids.indices.sorted { ids[$0] < ids[$1] }
        ascending = order.map { ids[$0] }
        places = order.map { Int32($0) }
    }

    /// Calls `body` with the place in ``ids`` of each of `sortedIds` (ascending) and its index in `sortedIds`,
    /// skipping ids that are not there.
    func forEachPlace(of sortedIds: [Int64], _ body: (_ place: Int, _ index: Int) -> Void) {
        var next = 0
        for (index, id) in sortedIds.enumerated() {
            while next < ascending.count, ascending[next] < id { next += 1 }
            guard next < ascending.count else { return }
            if ascending[next] == id { body(Int(places[next]), index) }
        }
    }
}

// The order of a full-text search: bm25 for up to `rankedMatches` matches, tiers of columns past that.
extension Library {
    /// The most matches a search ranks by bm25; more are ranked by tiers of columns
    /// (``rankByColumns(_:byTitle:)``). bm25 costs about a microsecond a match.
    static let rankedMatches = 1_000

    /// The ids of every match of `key`, best first: kept from an earlier call while the index is unchanged (its
    /// structure record, `bookSearch_data` row 10, changes with every write to the index, and a book's title, its
    /// tags of `bookTags` and its existence change the index with it).
    func rankedSearch(_ db: Database, _ key: SearchKey) throws -> [Int64] {
        let index = try Data.fetchOne(db.cachedStatement(sql: "SELECT block FROM bookSearch_data WHERE id = 10")) ?? Data()
        if let ids = rankings.withLock({ $0.ids(of: key, on: index) }) { return ids }
        let ids = try rank(db, key, on: index)
        rankings.withLock { $0.keep(ids, of: key, on: index) }
        return ids
    }

    /// Every match of `key`, ranked: by bm25 (a word in the title counting most: ``searchWeights``), then by title,
    /// when they are few; by tiers of columns past `key.rankingAtMost`.
    func rank(_ db: Database, _ key: SearchKey, on index: Data) throws -> [Int64] {
        let (from, condition, arguments) = Self.matching(key.query, searched: true)
        // The index's matches alone when no key of the query needs the books; each with its tier, read with it.
        let matches = key.query == LibraryQuery()
            ? try Self.tieredMatches(db, "SELECT rowid, \(Self.tierFunction)(bookSearch) FROM bookSearch WHERE bookSearch MATCH ?",
                                     [key.pattern])
            : try Self.tieredMatches(db, """
                SELECT b.id, \(Self.tierFunction)(bookSearch) FROM \(from) WHERE bookSearch MATCH ? AND \(condition)
                """, [key.pattern] + arguments)
        guard matches.count > key.rankingAtMost else {
            return try Self.ids(db, """
                SELECT b.id FROM \(from) WHERE bookSearch MATCH ? AND \(condition)
                ORDER BY bm25(bookSearch, \(Self.searchWeights.map { "\($0)" }.joined(separator: ", "))), b.title COLLATE NOCASE, b.id
                """, [key.pattern] + arguments)
        }
        return Self.rankByColumns(matches, byTitle: try titleOrder(db, on: index))
    }

    /// Many matches ranked by the weakest of their words' best columns: first the books with every word in the title,
    /// then with every word in the title or the people's names, then adding the series, the album, the composers,
    /// then the rest (``searchWeights``' columns, heaviest first); each tier by title. Each match's tier is the one
    /// ``tierFunction`` gave it.
    ///
    /// bm25 for every match would cost about a microsecond each (12 ms for a word of every book at 10,000 books). And
    /// ranks little past half the library: a word in more than half of the books has an IDF clamped to 1e-6 by FTS5,
    /// so when every match holds only such words (as when more than half the books match) bm25 orders them by which
    /// columns hold the words (weighted), how often and how long the book's text is. The tiers keep the first.
    static func rankByColumns(_ matches: [(id: Int64, tier: UInt8)], byTitle: TitleOrder) -> [Int64] {
        // Each book's tier, by its place in title order.
        let none = UInt8.max
        var tiers = [UInt8](repeating: none, count: byTitle.ids.count)
        let sorted = matches.sorted { $0.id < $1.id }
        byTitle.forEachPlace(of: sorted.map(\.id)) { place, match in tiers[place] = sorted[match].tier }
        var ranked = [[Int64]](repeating: [], count: tierColumns.count)
        for (place, tier) in tiers.enumerated() where tier != none { ranked[Int(tier)].append(byTitle.ids[place]) }
        return Array(ranked.joined())
    }

    /// Every book by title: kept while the index is `index`.
    func titleOrder(_ db: Database, on index: Data) throws -> TitleOrder {
        if let kept = rankings.withLock({ $0.byTitle }), kept.index == index { return kept.order }
        let order = TitleOrder(try Self.ids(db, "SELECT id FROM book INDEXED BY book_title ORDER BY \(BookSort.title.orderBy())"))
        rankings.withLock { $0.byTitle = (index, order) }
        return order
    }

    /// The id and the tier (``tierFunction``) of every row of `sql`.
    static func tieredMatches(_ db: Database, _ sql: String, _ arguments: StatementArguments) throws -> [(id: Int64, tier: UInt8)] {
        try rows(db, sql, arguments) { (sqlite3_column_int64($0, 0), UInt8(clamping: sqlite3_column_int($0, 1))) }
    }

    /// The columns of each tier of ``rankByColumns(_:byTitle:)``: those of each weight of ``searchWeights`` and the
    /// heavier ones; nil, the last, is every column.
    static let tierColumns: [[String]?] = {
        let weights = Set(searchWeights).sorted(by: >)
        return weights.dropLast().map { weight in
            zip(searchColumns, searchWeights).filter { $0.1 >= weight }.map(\.0)
        } + [nil]
    }()
}

// The tier of a match, computed by FTS5 as it reads the match: the doclists of the search's words are read once.
extension Library {
    /// The SQL function `lectern_search_tier(bookSearch)`: the tier of the current match of a full-text search, the
    /// first of ``tierColumns`` whose columns hold every word of it (each word, a phrase of the query, in one of them):
    /// the weakest of its words' best columns. What `{columns} : (pattern)` would find, tier after tier.
    static let tierFunction = "lectern_search_tier"

    /// The tier of each column of `bookSearch` (in the order of ``searchColumns``): the first of ``tierColumns``
    /// holding it.
    static let columnTiers: [Int32] = searchColumns.map { column in
        Int32(tierColumns.firstIndex { $0?.contains(column) ?? true }!)
    }

    /// Registers ``tierFunction`` with FTS5 on `db` (each connection of the library).
    static func addTierFunction(_ db: Database) throws {
        let api = FTS5.api(db)
        let code = api.pointee.xCreateFunction!(UnsafeMutablePointer(mutating: api), tierFunction, nil, { api, fts, context, _, _ in
            guard let api = api?.pointee else { return }
            let last = Int32(Library.tierColumns.count - 1)
            var worst: Int32 = 0
            for phrase in 0..<api.xPhraseCount!(fts) {
                var iterator = Fts5PhraseIter()
                var column: Int32 = -1
                let code = api.xPhraseFirstColumn!(fts, phrase, &iterator, &column)
                guard code == SQLITE_OK else { return sqlite3_result_error_code(context, code) }
                var best = last
                while column >= 0, best > worst {
                    if Int(column) < Library.columnTiers.count { best = min(best, Library.columnTiers[Int(column)]) }
                    api.xPhraseNextColumn!(fts, &iterator, &column)
                }
                worst = max(worst, best)
                if worst == last { break }
            }
            sqlite3_result_int(context, worst)
        }, nil)
        guard code == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: code), message: "can't add the FTS5 function \(tierFunction)")
        }
    }
}
