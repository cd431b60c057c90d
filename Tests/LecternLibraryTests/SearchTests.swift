import Foundation
import GRDB
@testable import LecternLibrary
import Testing
import TestSupport

/// Books to search: titles, authors, narrators' artist tags, a series shelf, notes and bookmarks.
struct SearchLibrary {
    let t: TestLibrary
    var library: Library { t.library }
    let discworld: Int64
    let eyre, heights, guards, mort, dune: Int64

    init() throws {
        t = try TestLibrary()
        let library = t.library
        discworld = try library.shelf(atPath: "Series/Discworld")!
        eyre = try library.add(ImportedBook(sourcePath: "/s/eyre", albumKey: "", title: "Jane Eyre", author: "Charlotte Brontë", coverPath: nil, files: [
            track("/s/eyre/1.mp3", title: "Chapter One", artist: "Juliet Stevenson", album: "Jane Eyre", genre: "Classics"),
            track("/s/eyre/2.mp3", title: "Chapter Two", artist: "Juliet Stevenson", album: "Jane Eyre", genre: "Classics"),
        ]))
        heights = try library.add(ImportedBook(sourcePath: "/s/heights", albumKey: "", title: "Wuthering Heights", author: "Emily Bronte", coverPath: nil, files: [
            track("/s/heights/1.mp3", album: "Wuthering Heights", composer: "Émile Waldteufel", genre: "Classics"),
        ]))
        guards = try library.add(ImportedBook(sourcePath: "/s/guards", albumKey: "", title: "Guards! Guards!", author: "Terry Pratchett", coverPath: nil, files: [
            track("/s/guards/1.mp3", artist: "Nigel Planer", album: "Guards! Guards!", genre: "Fantasy"),
        ]), into: discworld)
        mort = try library.add(ImportedBook(sourcePath: "/s/mort", albumKey: "", title: "Mort", author: "Terry Pratchett", coverPath: nil, files: [
            track("/s/mort/1.mp3", artist: "Tony Robinson", album: "Mort", genre: "Fantasy"),
        ]), into: discworld)
        dune = try library.add(ImportedBook(sourcePath: "/s/dune", albumKey: "", title: "Dune", author: "Frank Herbert", coverPath: nil, files: [
            track("/s/dune/1.mp3", artist: "Scott Brick", album: "Dune", genre: "Science Fiction"),
        ]))
    }

    func search(_ text: String, _ query: LibraryQuery = LibraryQuery(), offset: Int = 0, limit: Int = 50) throws -> [Int64] {
        try library.search(text, query, offset: offset, limit: limit).books.map(\.id!)
    }

    /// The books found, in any order.
    func found(_ text: String) throws -> Set<Int64> { Set(try search(text)) }

    /// The rows of the search index and of Find's tags that differ from what the book's values make now (none when
    /// they are in step), and how many rows each has.
    func indexDrift() throws -> (differing: Int, rows: Int, tagRows: Int) {
        let reader = try DatabaseQueue(path: t.path, configuration: { var c = Configuration(); c.readonly = true; return c }())
        return try reader.read { db in
            let columns = ["title", "author", "narrator", "series", "album", "composer", "genre", "files", "notes"]
            let tags = ["author", "album", "composer", "genre"]
            let differing = try Int.fetchOne(db, sql: """
                SELECT count(*) FROM bookSearchText v LEFT JOIN bookSearch s ON s.rowid = v.id LEFT JOIN bookTags t ON t.bookId = v.id
                WHERE s.rowid IS NULL OR t.bookId IS NULL OR \(columns.map { "s.\($0) IS NOT v.\($0)" }.joined(separator: " OR "))
                   OR \(tags.map { "t.\($0) IS NOT v.\($0)" }.joined(separator: " OR "))
                """) ?? -1
            // An import defers its book's rows to its end: none is left deferred after it.
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM bookDeferred") == 0)
            return (differing, try Int.fetchOne(db, sql: "SELECT count(*) FROM bookSearch") ?? -1,
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM bookTags") ?? -1)
        }
    }
}

@Suite("Full-text search")
struct SearchTests {
    @Test("Words are prefixes, all required, case and accents folded")
    func prefixesAndAccents() throws {
        let s = try SearchLibrary()
        #expect(try s.found("Bronte") == [s.eyre, s.heights])
        #expect(try s.found("brontë") == [s.eyre, s.heights])
        #expect(try s.found("BRONT") == [s.eyre, s.heights])
        #expect(try s.search("bront wuth") == [s.heights])
        #expect(try s.found("pratch") == [s.guards, s.mort])
        #expect(try s.search("emile") == [s.heights], "a composer tag, accent folded")
        #expect(try s.search("juliet") == [s.eyre], "a file's artist")
        #expect(try s.search("chapter two") == [s.eyre], "a file's title")
        #expect(try s.search("science fic") == [s.dune], "a genre")
        #expect(try s.found("disc") == [s.guards, s.mort], "the series: a shelf above the books")
        #expect(try s.search("series discworld mort") == [s.mort])
        #expect(try s.search("rontë") == [], "a word's start, not its middle")
        #expect(try s.search("guards!") == [s.guards], "punctuation is not a word of its own")
        #expect(try s.search("\"dune\"") == [s.dune], "quotes are literal")
        #expect(try s.search("frank-herb") == [s.dune], "a word the text joins is a phrase")
        #expect(try s.search("herbert-frank") == [], "in its order")
        #expect(try s.search("zzz") == [])
        #expect(try s.library.search("pratchett", offset: 0, limit: 10).total == 2)
    }

    @Test("The title counts most, then the people, then the files and notes; ties by title")
    func ranking() throws {
        let s = try SearchLibrary()
        let other = try s.library.add(ImportedBook(sourcePath: "/s/other", albumKey: "", title: "The Mort Companion", author: "Stephen Briggs", coverPath: nil,
                                                   files: [track("/s/other/1.mp3")]))
        let noted = try s.library.add(ImportedBook(sourcePath: "/s/noted", albumKey: "", title: "Reaper Man", author: "Terry Pratchett", coverPath: nil,
                                                   files: [track("/s/noted/1.mp3")]))
        try s.library.setNote(of: noted, "the sequel to mort")
        // The titles first, a note last.
        let mort = try s.search("mort")
        #expect(Set(mort.prefix(2)) == [s.mort, other])
        #expect(mort.last == noted)
        // An author's name in the author column beats the same name in a note.
        try s.library.setNote(of: s.dune, "lent to herbert's neighbour")
        #expect(try s.search("herbert") == [s.dune])
        try s.library.setNote(of: s.eyre, "herbert liked this one")
        #expect(try s.search("herbert") == [s.dune, s.eyre])
        // Equal ranks go by title.
        let two = try s.library.add(importedBook("/s/two", title: "Saga Two", paths: ["1.mp3"]))
        let one = try s.library.add(importedBook("/s/one", title: "Saga One", paths: ["1.mp3"]))
        #expect(try s.search("saga") == [one, two])
    }

    @Test("Book notes and bookmarks' titles and notes are found")
    func notes() throws {
        let s = try SearchLibrary()
        try s.library.setNote(of: s.dune, "Reread the Litany against Fear")
        let file = try s.library.fileIds(of: s.heights)[0]
        let mark = try s.library.addBookmark(to: s.heights, file: file, offset: 5, title: "The moors", note: "Heathcliff returns")
        #expect(try s.search("litany") == [s.dune])
        #expect(try s.search("moors") == [s.heights])
        #expect(try s.search("heathcl") == [s.heights])
        try s.library.setBookmarkNote(mark.id!, "Catherine's ghost")
        #expect(try s.search("heathcliff") == [])
        #expect(try s.search("catherine") == [s.heights])
        try s.library.renameBookmark(mark.id!, to: "Thrushcross Grange")
        #expect(try s.search("moors") == [])
        #expect(try s.search("thrushcross") == [s.heights])
        try s.library.deleteBookmark(mark.id!)
        #expect(try s.search("catherine") == [])
        #expect(try s.search("thrushcross") == [])
        try s.library.setNote(of: s.dune, "")
        #expect(try s.search("litany") == [])
        #expect(try s.indexDrift().differing == 0)
    }

    @Test("Renames, moves, deletes and imports again keep the index in step")
    func indexFollowsWrites() throws {
        let s = try SearchLibrary()
        try s.library.renameBook(s.dune, to: "Dune Messiah")
        #expect(try s.search("messiah") == [s.dune])
        try s.library.renameBook(s.dune, to: "Children of Dune")
        #expect(try s.search("messiah") == [])
        #expect(try s.search("children") == [s.dune])

        // A shelf renamed or moved changes the series of the books on it and below it.
        try s.library.renameShelf(s.discworld, to: "Ankh-Morpork")
        #expect(try s.search("discworld") == [])
        #expect(try s.found("ankh") == [s.guards, s.mort])
        let top = try s.library.createShelf(named: "Favourites", in: nil)
        try s.library.moveShelf(s.discworld, to: top.id)
        #expect(try s.search("series") == [])
        #expect(try s.found("favour") == [s.guards, s.mort])
        try s.library.moveBook(s.mort, to: nil)
        #expect(try s.search("favour") == [s.guards])
        try s.library.moveBook(s.dune, to: s.discworld)
        #expect(try s.found("favour") == [s.dune, s.guards])

        // Imported again with other tags: the old ones are gone, the new ones found; a file no longer there keeps
        // its tags (it stays in the book, unavailable).
        try s.library.add(ImportedBook(sourcePath: "/s/eyre", albumKey: "", title: "Jane Eyre", author: "Charlotte Brontë", coverPath: nil, files: [
            track("/s/eyre/1.mp3", title: "Chapter One", artist: "Thandie Newton", album: "Jane Eyre", genre: "Romance"),
            track("/s/eyre/3.mp3", title: "Chapter Three", artist: "Thandie Newton", album: "Jane Eyre", genre: "Romance"),
        ]))
        #expect(try s.search("thandie") == [s.eyre])
        #expect(try s.search("romance") == [s.eyre])
        #expect(try s.search("chapter three") == [s.eyre])
        #expect(try s.search("chapter two") == [s.eyre], "the file no longer there is still one of the book's")
        #expect(try s.search("juliet") == [s.eyre], "its artist with it")
        #expect(try s.found("classics") == [s.eyre, s.heights])

        try s.library.deleteBook(s.heights)
        #expect(try s.search("wuthering") == [])
        #expect(try s.search("bronte") == [s.eyre])
        #expect(try s.library.deleteShelf(top.id!, recursive: true).sorted() == [s.guards, s.dune].sorted())
        #expect(try s.search("guards") == [])
        #expect(try s.search("children") == [])
        let drift = try s.indexDrift()
        #expect(drift.differing == 0)
        #expect(drift.rows == 2, "one row per book left: Jane Eyre and Mort")
        #expect(drift.tagRows == 2)
    }

    @Test("Find's filters combine with the words")
    func filters() throws {
        let s = try SearchLibrary()
        #expect(try s.search("bronte", LibraryQuery(title: "heights")) == [s.heights])
        #expect(try s.search("classics", LibraryQuery(author: "stevenson")) == [s.eyre])
        #expect(try s.search("classics", LibraryQuery(album: "wuthering")) == [s.heights])
        #expect(try s.search("fantasy", LibraryQuery(author: "robinson")) == [s.mort])
        #expect(try s.search("fantasy", LibraryQuery(genre: "science")) == [])
        #expect(try s.search("", LibraryQuery(genre: "classics")) == [s.eyre, s.heights], "no words: the filters alone, by title")
        #expect(try s.search("  ", LibraryQuery(composer: "ÉMILE")) == [s.heights])
        #expect(try s.search("") == [s.dune, s.guards, s.eyre, s.mort, s.heights])
        #expect(try s.library.search("", LibraryQuery(author: "pratchett"), offset: 0, limit: 1).total == 2)
    }

    @Test("Pages of a search add up to the whole, and the total is every match")
    func searchPages() throws {
        let s = try SearchLibrary()
        let whole = try s.search("")
        for limit in 1...6 {
            var pages: [Int64] = []
            var offset = 0
            while true {
                let page = try s.library.search("", offset: offset, limit: limit)
                #expect(page.total == 5)
                #expect(page.books.count <= limit)
                if page.books.isEmpty { break }
                pages += page.books.map(\.id!)
                offset += limit
            }
            #expect(pages == whole, "limit \(limit)")
        }
        let first = try s.search("classics", offset: 0, limit: 1), second = try s.search("classics", offset: 1, limit: 1)
        #expect(Set(first + second) == [s.eyre, s.heights])
        #expect(try s.search("classics", offset: 2, limit: 1) == [])
        #expect(try s.library.search("classics", offset: 1_000_000, limit: 200) == BookPage(books: [], total: 2))
    }

    @Test("Bad pages and texts are refused, saying why, and change nothing")
    func badArguments() throws {
        let s = try SearchLibrary()
        let before = try Snapshot(s.library)
        func refused(_ message: String, _ body: () throws -> BookPage) {
            do {
                let page = try body()
                Issue.record("expected a refusal (\(message)), got \(page.books.count) books")
            } catch let error as LibraryError {
                #expect(error == .invalidArgument(message))
            } catch {
                Issue.record("expected a LibraryError, got \(error)")
            }
        }
        refused("a page holds 1 to 200 books, not 0") { try s.library.search("dune", offset: 0, limit: 0) }
        refused("a page holds 1 to 200 books, not 201") { try s.library.search("dune", offset: 0, limit: 201) }
        refused("the offset can't be negative") { try s.library.search("dune", offset: -1, limit: 10) }
        refused("the search text has no letters or digits to look for") { try s.library.search("!! -- ?", offset: 0, limit: 10) }
        refused("the search text is longer than 1024 characters") { try s.library.search(String(repeating: "a", count: 1025), offset: 0, limit: 10) }
        refused("a page holds 1 to 200 books, not 0") { try s.library.books(in: nil, recursive: true, sortedBy: .title, offset: 0, limit: 0) }
        refused("the offset can't be negative") { try s.library.books(in: nil, recursive: true, sortedBy: .author, offset: -5, limit: 1) }
        expectError(.notFound) { try s.library.books(in: 9999, recursive: false, sortedBy: .title, offset: 0, limit: 10) }
        #expect(try s.library.search("a", offset: 0, limit: 200).books.count <= 200)
        #expect(try Snapshot(s.library) == before)
    }
}

@Suite("Listings a page at a time")
struct ListingTests {
    static func ids(_ s: SearchLibrary, _ order: BookSort, shelf: Int64? = nil, recursive: Bool = true) throws -> [Int64] {
        try s.library.books(in: shelf, recursive: recursive, sortedBy: order, offset: 0, limit: 200).books.map(\.id!)
    }

    @Test("By title and by author (books without one last)")
    func titleAndAuthor() throws {
        let s = try SearchLibrary()
        #expect(try Self.ids(s, .title) == [s.dune, s.guards, s.eyre, s.mort, s.heights])
        let anonymous = try s.library.add(ImportedBook(sourcePath: "/s/anon", albumKey: "", title: "Beowulf", author: nil, coverPath: nil,
                                                       files: [track("/s/anon/1.mp3")]))
        // Charlotte Brontë, Emily Bronte, Frank Herbert, Terry Pratchett (Guards!, Mort), then no author.
        #expect(try Self.ids(s, .author) == [s.eyre, s.heights, s.dune, s.guards, s.mort, anonymous])
        // A shelf's books, and the top level's.
        #expect(try Self.ids(s, .title, shelf: s.discworld, recursive: false) == [s.guards, s.mort])
        #expect(try Self.ids(s, .title, shelf: nil, recursive: false) == [anonymous, s.dune, s.eyre, s.heights])
        let series = try #require(try s.library.shelf(atPath: "Series"))
        #expect(try Self.ids(s, .title, shelf: series, recursive: false) == [])
        #expect(try s.library.books(in: series, recursive: true, sortedBy: .author, offset: 1, limit: 5)
                == BookPage(books: [try s.library.book(s.mort)], total: 2, totals: try s.library.totals(of: [s.mort])))
    }

    @Test("Recently played and added first; the furthest through first")
    func playedAddedProgress() throws {
        let s = try SearchLibrary()
        #expect(try Self.ids(s, .added) == [s.dune, s.mort, s.guards, s.heights, s.eyre])
        try s.library.markPlayed(s.heights, at: Date(timeIntervalSince1970: 1000))
        try s.library.markPlayed(s.guards, at: Date(timeIntervalSince1970: 3000))
        try s.library.markPlayed(s.dune, at: Date(timeIntervalSince1970: 2000))
        let played = try Self.ids(s, .played)
        #expect(Array(played.prefix(3)) == [s.guards, s.dune, s.heights])
        #expect(Set(played.suffix(2)) == [s.eyre, s.mort], "never played: last")

        // Jane Eyre: two files of 1 s, half way through the second: 75 %. Dune: 10 % of its one file. Mort finished.
        let eyreFiles = try s.library.fileIds(of: s.eyre)
        try s.library.savePosition(of: s.eyre, file: eyreFiles[1], offset: 500_000)
        try s.library.savePosition(of: s.dune, file: try s.library.fileIds(of: s.dune)[0], offset: 100_000)
        try s.library.setFinished(s.mort, true)
        let progress = try Self.ids(s, .progress)
        #expect(Array(progress.prefix(3)) == [s.mort, s.eyre, s.dune])
        // The progress follows the place, the files' order and the finished flag.
        try s.library.reorderFiles(of: s.eyre, eyreFiles.reversed())  // now 25 % through
        try s.library.savePosition(of: s.dune, file: try s.library.fileIds(of: s.dune)[0], offset: 600_000)
        try s.library.setFinished(s.mort, false)
        #expect(Array(try Self.ids(s, .progress).prefix(3)) == [s.dune, s.eyre, s.mort])
        let stored = try DatabaseQueue(path: s.t.path).read { db in
            try Double.fetchAll(db, sql: "SELECT progress FROM book WHERE id IN (?, ?, ?) ORDER BY id", arguments: [s.eyre, s.mort, s.dune])
        }
        #expect(stored == [0.25, 0, 0.6])
    }

    @Test("Pages of every order add up to the whole", arguments: BookSort.allCases)
    func pages(order: BookSort) throws {
        let s = try SearchLibrary()
        try s.library.markPlayed(s.mort, at: Date(timeIntervalSince1970: 1000))
        let whole = try Self.ids(s, order)
        #expect(Set(whole).count == 5)
        for limit in 1...6 {
            var pages: [Int64] = []
            var offset = 0
            while offset <= 5 {
                let page = try s.library.books(in: nil, recursive: true, sortedBy: order, offset: offset, limit: limit)
                #expect(page.total == 5)
                pages += page.books.map(\.id!)
                offset += limit
            }
            #expect(pages == whole, "limit \(limit)")
        }
        #expect(try s.library.books(in: nil, recursive: true, sortedBy: order, offset: 5, limit: 1) == BookPage(books: [], total: 5))
    }
}

/// Books holding "part" in each kind of column, for searches with more matches than bm25 ranks.
struct CommonWordLibrary {
    let t: TestLibrary
    var library: Library { t.library }
    let machine, zebra, partridge, unknown, party, apple, mango, machineAge: Int64

    init() throws {
        t = try TestLibrary()
        let library = t.library
        func book(_ name: String, title: String, author: String? = nil, files: [ImportedBook.File]? = nil, into shelf: Int64? = nil) throws -> Int64 {
            try library.add(importedBook("/c/" + name, title: title, author: author, paths: ["1.mp3"], files: files), into: shelf)
        }
        machine = try book("machine", title: "Part of the Machine")
        zebra = try book("zebra", title: "Zebra Part")
        partridge = try book("partridge", title: "Birds", author: "Anna Partridge")
        unknown = try book("unknown", title: "Travels", into: try library.shelf(atPath: "Parts Unknown"))
        party = try book("party", title: "Songs", files: [track("/c/party/1.mp3", album: "Party Songs")])
        apple = try book("apple", title: "Apple", files: [track("/c/apple/1.mp3", title: "part 1, birds")])
        mango = try book("mango", title: "Mango", files: [track("/c/mango/1.mp3", title: "part 2")])
        machineAge = try book("age", title: "Machine Age", files: [track("/c/age/1.mp3", title: "part 3")])
    }

    /// The ids of a search, bm25 ranking at most `ranking` matches.
    func search(_ text: String, _ query: LibraryQuery = LibraryQuery(), ranking: Int, offset: Int = 0, limit: Int = 50) throws -> [Int64] {
        try library.search(text, query, offset: offset, limit: limit, rankingAtMost: ranking).books.map(\.id!)
    }
}

/// Books holding "part" and "mach" in every kind of column, some in the same one, some titles equal but for case.
struct TieredLibrary {
    let t: TestLibrary
    var library: Library { t.library }

    init() throws {
        t = try TestLibrary()
        let library = t.library
        let series = try library.shelf(atPath: "Partisans")
        let books: [(title: String, author: String?, series: Int64?, file: ImportedBook.File?, note: String?)] = [
            ("Part Machine", nil, nil, nil, nil),
            ("part", "Mach Smith", nil, nil, nil),
            ("Birds", "Anna Partridge", nil, track("/t/3/1.mp3", composer: "Machaut"), nil),
            ("Machines", nil, series, nil, nil),
            ("Songs", nil, nil, track("/t/5/1.mp3", album: "Party Songs", genre: "Machine Music"), nil),
            ("Tunes", nil, nil, track("/t/6/1.mp3", composer: "Dolly Parton"), "machine noises"),
            ("Dances", nil, nil, track("/t/7/1.mp3", title: "mach 1", genre: "Partita"), nil),
            ("Apple", "Antonio Machado", nil, track("/t/8/1.mp3", title: "part 2"), nil),
            ("Mach", nil, nil, nil, "a partial list"),
            ("Zed", nil, nil, track("/t/10/1.mp3", artist: "Part Mach"), nil),
            ("PART", nil, series, track("/t/11/1.mp3", title: "part 3"), nil),
            ("Mango", nil, nil, track("/t/12/1.mp3", album: "Mach Five"), nil),
            ("Partly", nil, nil, track("/t/13/1.mp3", title: "mach 2"), nil),
        ]
        for (number, b) in books.enumerated() {
            let source = "/t/\(number + 1)"
            let id = try library.add(importedBook(source, title: b.title, author: b.author, paths: ["1.mp3"],
                                                  files: b.file.map { [$0] }), into: b.series)
            if let note = b.note { try library.setNote(of: id, note) }
        }
    }

    /// The matches of `text` and `query` by tier, each tier by title: each match's tier found with one full-text query
    /// of each tier's columns, the first holding it.
    func tiersByColumnQueries(_ text: String, _ query: LibraryQuery) throws -> [(id: Int64, tier: Int)] {
        guard let pattern = Library.searchPattern(text) else { return [] }
        return try library.read { db in
            let (from, condition, arguments) = Library.matching(query, searched: true)
            let matches = try Int64.fetchAll(db, sql: "SELECT b.id FROM \(from) WHERE bookSearch MATCH ? AND \(condition)",
                                             arguments: [pattern] + arguments)
            let holding = try Library.tierColumns.map { columns in
                try columns.map { columns in
                    Set(try Int64.fetchAll(db, sql: "SELECT rowid FROM bookSearch WHERE bookSearch MATCH ?",
                                           arguments: ["{\(columns.joined(separator: " "))} : (\(pattern))"]))
                }
            }
            let byTitle = try Int64.fetchAll(db, sql: "SELECT id FROM book ORDER BY title COLLATE NOCASE, id")
            return matches.map { id in (id, holding.firstIndex { $0?.contains(id) ?? true }!) }
                .sorted { ($0.tier, byTitle.firstIndex(of: $0.id)!) < ($1.tier, byTitle.firstIndex(of: $1.id)!) }
        }
    }
}

@Suite("Full-text search of a word in many books")
struct CommonWordSearchTests {
    @Test("Past the books bm25 ranks: every word in the title first, then the names, the series, the album, the rest; by title")
    func tiersOfColumns() throws {
        let s = try CommonWordLibrary()
        #expect(Library.tierColumns.count == 6)
        #expect(Library.tierColumns.first == ["title"])
        let tiers = [s.machine, s.zebra, s.partridge, s.unknown, s.party, s.apple, s.machineAge, s.mango]
        #expect(try s.search("part", ranking: 3) == tiers)
        #expect(try s.library.search("part", LibraryQuery(), offset: 0, limit: 3, rankingAtMost: 3).total == 8)
        // The same matches when bm25 ranks them: the titles first there too.
        let ranked = try s.search("part", ranking: 1_000)
        #expect(Set(ranked) == Set(tiers))
        #expect(Set(ranked.prefix(2)) == [s.machine, s.zebra])
        // Find's keys combine with it.
        #expect(try s.search("part", LibraryQuery(title: "a"), ranking: 2) == [s.machine, s.zebra, s.unknown, s.apple, s.machineAge, s.mango])
        // Two common words: the tier is the weaker word's best column.
        #expect(try s.search("part mach", ranking: 1) == [s.machine, s.machineAge])
    }

    @Test("A rare word with a common one is ranked by bm25: the rare word's column decides")
    func rareAndCommon() throws {
        let s = try CommonWordLibrary()
        // Two matches, within what bm25 ranks: "birds" in a title before "birds" in a file's title, though "Apple"
        // sorts first and "part" is in a file of both.
        #expect(try s.search("part birds", ranking: 2) == [s.partridge, s.apple])
        #expect(try s.search("birds part", ranking: 2) == [s.partridge, s.apple])
        // Past what bm25 ranks, the tiers agree: every word in the title or the names, then in a file.
        #expect(try s.search("part birds", ranking: 1) == [s.partridge, s.apple])
    }

    @Test("Pages of a common word add up to the whole ranking, and follow renames and deletes")
    func pagesStayConsistent() throws {
        let s = try CommonWordLibrary()
        let whole = try s.search("part", ranking: 3)
        for limit in 1...9 {
            var pages: [Int64] = []
            var offset = 0
            while offset < whole.count + limit {
                let page = try s.library.search("part", LibraryQuery(), offset: offset, limit: limit, rankingAtMost: 3)
                #expect(page.total == whole.count)
                #expect(page.books.count == min(limit, max(0, whole.count - offset)))
                pages += page.books.map(\.id!)
                offset += limit
            }
            #expect(pages == whole, "pages of \(limit)")
        }
        // The ranking kept for the next pages is made again after a write to the index.
        try s.library.renameBook(s.apple, to: "Zucchini")
        #expect(try s.search("part", ranking: 3).suffix(3) == [s.machineAge, s.mango, s.apple])
        try s.library.deleteBook(s.zebra)
        #expect(try s.search("part", ranking: 3).prefix(2) == [s.machine, s.partridge])
        #expect(try s.library.search("part", LibraryQuery(), offset: 0, limit: 2, rankingAtMost: 3).total == 7)
        // And a write elsewhere keeps it: the same ranking.
        try s.library.setNote(of: s.mango, "")
        #expect(try s.search("part", ranking: 3).count == 7)
        // A book added after the search is in the next one, in its tier by title.
        let aardvark = try s.library.add(importedBook("/c/aardvark", title: "Aardvark", paths: ["1.mp3"],
                                                      files: [track("/c/aardvark/1.mp3", title: "part 4")]))
        #expect(try s.search("part", ranking: 3).suffix(4) == [aardvark, s.machineAge, s.mango, s.apple])
    }

    @Test("Ids in title order are found by id: the places of those that are books, in the order asked")
    func titleOrderPlaces() {
        let order = TitleOrder([5, 2, 9, 1])
        var found: [(place: Int, index: Int)] = []
        order.forEachPlace(of: [1, 3, 5, 9, 10]) { found.append(($0, $1)) }
        #expect(found.map(\.place) == [3, 0, 2])
        #expect(found.map(\.index) == [0, 2, 3])
        found = []
        order.forEachPlace(of: []) { found.append(($0, $1)) }
        #expect(found.isEmpty)
    }

    @Test("The tiers are those the columns' own queries find: for each match, the first tier whose columns hold every word",
          arguments: ["part", "mach", "part mach", "mach part", "pa", "ma", "pa ma", "parts", "zzz"])
    func tiersAsColumnQueries(text: String) throws {
        let s = try TieredLibrary()
        for query in [LibraryQuery(), LibraryQuery(title: "a"), LibraryQuery(author: "part")] {
            let expected = try s.tiersByColumnQueries(text, query)
            let found = try s.library.search(text, query, offset: 0, limit: Library.maximumPageSize, rankingAtMost: 1).books.map(\.id!)
            #expect(found == expected.map(\.id), "\(text), \(query)")
        }
        if text == "part" {
            // The word is in every tier.
            #expect(Set(try s.tiersByColumnQueries(text, LibraryQuery()).map(\.tier)) == Set(Library.tierColumns.indices))
        }
    }
}

@Suite("What a page reads")
struct PageReadTests {
    @Test("A page's books are read as GRDB reads their rows: every column, NULL or not, dates to the millisecond")
    func booksAsGRDBReadsThem() throws {
        let s = try CommonWordLibrary()
        try s.library.markPlayed(s.mango, at: Date(timeIntervalSince1970: 977_578_383.3585689))
        try s.library.setNote(of: s.apple, "an apple a day")
        let writer = try DatabaseQueue(path: s.t.path)
        try writer.write { db in
            try db.execute(sql: """
                UPDATE book SET narrator = 'Nigel Planer', mountPath = '/', loudness = -18.25, loudnessProblem = NULL,
                  lastPlayedAt = '2000-12-23 13:33:03.359', addedAt = '1969-12-31 23:59:59.999', volume = 1.5, shuffle = 1,
                  offline = 1, normalise = 1, compress = 1, skipSilence = 1, skipIntro = 2.5, finished = 1
                WHERE id = ?
                """, arguments: [s.zebra])
            try db.execute(sql: "UPDATE book SET modifiedAt = '2024-02-29T13:45:07.250', loudnessProblem = 'silence' WHERE id = ?",
                           arguments: [s.party])
            try db.execute(sql: "UPDATE book SET lastPlayedAt = '2024-02-29 13:45:07.250+02:00' WHERE id = ?", arguments: [s.machine])
            // Text with a NUL (written by something else than Lectern): up to the NUL, as GRDB reads it.
            try db.execute(sql: "UPDATE book SET author = 'Ann' || char(0) || 'Other', narrator = CAST(x'41004200' AS TEXT) WHERE id = ?",
                           arguments: [s.apple])
        }
        try writer.close()
        try s.library.read { db in
            for sql in ["SELECT * FROM book ORDER BY id", "SELECT title AS x, note, * FROM book ORDER BY title"] {
                let read = try Book.read(db, sql: sql)
                #expect(read.count == 8)
                #expect(read == (try Book.fetchAll(db, sql: sql)), "\(sql)")
            }
        }
        let page = try s.library.books(in: nil, recursive: true, sortedBy: .title, offset: 0, limit: 8)
        #expect(page.books.first { $0.id == s.zebra }?.narrator == "Nigel Planer")
        #expect(page.totals[s.zebra] == BookTotals(files: 1, available: 1, duration: 1_000_000))
        let apple = page.books.first { $0.id == s.apple }
        #expect(apple?.author == "Ann" && apple?.narrator == "A")
    }

    @Test("Totals and books by id, a page of them or more: those of the books that exist, in the order asked")
    func manyIds() throws {
        let s = try CommonWordLibrary()
        let books = [s.mango, s.machine, s.apple]
        // An id again in another page of ids.
        let ids = [s.apple] + (1_000...1_450).map(Int64.init) + books
        let totals = try s.library.totals(of: ids)
        #expect(totals.count == 3)
        #expect(totals[s.apple] == BookTotals(files: 1, available: 1, duration: 1_000_000))
        #expect(try s.library.totals(of: []).isEmpty)
        let (found, reversed) = try s.library.read { db in
            (try Library.books(db, ids).map(\.id!), try Library.books(db, Array(books.reversed())).map(\.id!))
        }
        #expect(found == [s.apple] + books)
        #expect(reversed == books.reversed())
    }

    @Test("A page's totals come from the index of the files' totals alone, not from the files' rows")
    func totalsFromTheIndex() throws {
        let t = try TestLibrary()
        let plan = try t.library.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + Library.totalsSQL(3), arguments: [1, 2, 3]).map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.contains("COVERING INDEX bookFile_totals") }, "\(plan)")
    }
}
