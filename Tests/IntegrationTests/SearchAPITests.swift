import DBus
import Foundation
import Testing
import TestSupport

extension DaemonFixture {
    /// Search(text, query, offset, limit): the titles of the page, and the total.
    func search(_ text: String, _ query: [String: DBusValue] = [:], offset: UInt32 = 0, limit: UInt32 = 50) async throws -> (titles: [String], total: UInt32) {
        let reply = try await lib("Search", [.string(text), .vardict(query), .uint32(offset), .uint32(limit)])
        return (Self.titles(reply.first), UInt32(reply.dropFirst().first?.int64 ?? 0))
    }

    /// ListBooksPage(shelf, recursive, order, offset, limit): the books of the page, and the total.
    func page(_ order: String, offset: UInt32, limit: UInt32, shelf: Int64 = 0, recursive: Bool = true) async throws -> (books: [[String: DBusValue]], total: UInt32) {
        let reply = try await lib("ListBooksPage", [.int64(shelf), .boolean(recursive), .string(order), .uint32(offset), .uint32(limit)])
        return (Self.books(reply.first), UInt32(reply.dropFirst().first?.int64 ?? 0))
    }

    static func titles(_ books: DBusValue?) -> [String] {
        Self.books(books).compactMap { $0["title"]?.string }
    }

    /// Calls a Library1 method that must fail; the error's name and message.
    func failure(_ method: String, _ arguments: [DBusValue]) async -> (name: String, message: String)? {
        do {
            try await lib(method, arguments)
            return nil
        } catch let error as BusError {
            return (error.name, error.message)
        } catch {
            return ("not a BusError", "\(error)")
        }
    }

    /// Adds `count` books of one file each with sqlite3 (python3's module), as another writer of the file would: the
    /// schema's triggers index them. Titles "Generated 001"...; added one second apart, the last the most recent.
    func insertBooks(_ count: Int) async throws {
        let script = """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            for i in range(1, int(sys.argv[2]) + 1):
                added = '2025-01-01 00:%02d:%02d.000' % (i // 60, i % 60)
                c.execute("INSERT INTO book(title, author, addedAt, modifiedAt, userOrder) VALUES (?, ?, ?, ?, 1000 + ?)",
                          ('Generated %03d' % i, 'Writer %02d' % (i % 7), added, added, i))
                c.execute("INSERT INTO bookFile(bookId, path, position, duration) VALUES (?, ?, 0, 1000000)",
                          (c.execute('SELECT last_insert_rowid()').fetchone()[0], '/generated/%03d.ogg' % i))
            c.commit()
            """
        let result = try await Subprocess.run("python3", ["-c", script, databasePath, String(count)], timeout: .seconds(30))
        guard result.status == 0 else { throw FixtureError("python3 sqlite3: \(result.stderr)") }
    }
}

extension Integration.Library {
    /// org.lectern.Library1's Search and ListBooksPage, and the bounds of ListBooks and Find.
    @Suite struct SearchAPI {
        @Test func searchFindsPrefixesAccentsAndNotesAndFollowsEveryChange() async throws {
            try await DaemonFixture.with { d in
                try await d.importOK(try await d.libraryMedia.tree)
                var found = try await d.search("mix")
                #expect(Set(found.titles) == ["Alpha Mix", "Beta Mix"])
                #expect(found.total == 2)
                #expect(Set(try await d.search("CY WRIT").titles) == ["Chaptered Book", "Disc Set"], "the author, as prefixes")
                #expect(try await d.search("part thr").titles == ["Mp3 Saga"], "a file's title")
                #expect(try await d.search("mix", ["album": .string("beta")]).titles == ["Beta Mix"], "with Find's keys")
                #expect(try await d.search("", ["author": .string("bo mixer")]).titles == ["Alpha Mix", "Beta Mix"], "the keys alone, by title")

                let saga = try await d.bookID(titled: "Mp3 Saga")
                try await d.lib("SetBookNote", [.int64(saga), .string("Brontë would have liked it")])
                #expect(try await d.search("bronte").titles == ["Mp3 Saga"])
                let mark = try await d.marks("AddBookmark", [.int64(saga), .string("The moors"), .string("")]).first?.int64 ?? 0
                try await d.marks("SetBookmarkNote", [.int64(mark), .string("Heathcliff returns")])
                #expect(try await d.search("heathcl").titles == ["Mp3 Saga"])
                #expect(try await d.search("moors").titles == ["Mp3 Saga"])
                try await d.marks("DeleteBookmark", [.int64(mark)])
                #expect(try await d.search("heathcl").titles == [])

                try await d.lib("RenameBook", [.int64(saga), .string("Émile's Saga")])
                #expect(try await d.search("emile").titles == ["Émile's Saga"])
                #expect(try await d.search("Mp3 Saga").titles == ["Émile's Saga"], "the album tag still has the old name")
                try await d.lib("DeleteBook", [.int64(saga)])
                #expect(try await d.search("emile").titles == [])
                found = try await d.search("", limit: 200)
                #expect(found.total == UInt32(LibraryMedia.treeTitles.count - 1))
            }
        }

        /// Listings read through the database's reader connections while an import writes: each reply is the library at
        /// one moment (every book with all its files, the total its books), and once the import is done, all of it.
        @Test func listingsReadWhileAnImportWritesShowWholeBooks() async throws {
            try await DaemonFixture.with { d in
                var filesSeen: [Int64: Int64] = [:]
                // The books are written in one transaction just before the import ends: a page reads them meanwhile in
                // most runs. When none did, the books are deleted and imported again (at most three times).
                for _ in 0..<3 where filesSeen.isEmpty {
                    for book in try await d.allBooks() { try await d.lib("DeleteBook", [.int64(book["id"]?.int64 ?? 0)]) }
                    let mark = d.signals.mark
                    let reply = try await d.lib("Import", [.string(try await d.libraryMedia.tree.path), .string("")])
                    let job = try #require(reply.first?.int64)
                    func finished() -> Bool {
                        d.signals.since(mark).contains { $0.member == "ImportFinished" && $0.arguments.first?.int64 == job }
                    }
                    let deadline = ContinuousClock.now + .seconds(60)
                    while !finished(), ContinuousClock.now < deadline {
                        let page = try await d.page("added", offset: 0, limit: 200)
                        #expect(Int(page.total) == page.books.count)
                        for book in page.books {
                            let id = try #require(book["id"]?.int64)
                            let files = try #require(book["files"]?.int64, "a book listed without its file count")
                            #expect(files > 0, "a book listed without its files")
                            filesSeen[id] = files
                        }
                    }
                    #expect(finished())
                }
                #expect(!filesSeen.isEmpty, "no page read a book while the import wrote, in three imports")
                let after = try await d.page("title", offset: 0, limit: 200)
                #expect(after.books.compactMap { $0["title"]?.string } == LibraryMedia.treeTitles)
                for (id, files) in filesSeen {
                    #expect(Int64(try await d.files(of: id).count) == files, "book \(id): all its files, or none of it")
                }
            }
        }

        @Test func listingsComeAPageAtATimeSortedByTheDatabase() async throws {
            try await DaemonFixture.with { d in
                try await d.importOK(try await d.libraryMedia.tree)
                try await d.insertBooks(130)
                let all = LibraryMedia.treeTitles.count + 130

                // Pages of every order add up to the whole listing, each book once.
                var byOrder: [String: [String]] = [:]
                for order in ["title", "author", "played", "added", "progress", "modified", "user"] {
                    var titles: [String] = []
                    var offset: UInt32 = 0
                    while true {
                        let page = try await d.page(order, offset: offset, limit: 50)
                        #expect(page.total == UInt32(all), "\(order)")
                        if page.books.isEmpty { break }
                        titles += page.books.compactMap { $0["title"]?.string }
                        offset += 50
                    }
                    #expect(titles.count == all, "\(order)")
                    #expect(Set(titles).count == all, "\(order)")
                    byOrder[order] = titles
                }
                let byTitle = try #require(byOrder["title"])
                #expect(byTitle == byTitle.sorted { $0.lowercased() < $1.lowercased() })
                let added = try #require(byOrder["added"])
                #expect(Set(added.prefix(LibraryMedia.treeTitles.count)) == Set(LibraryMedia.treeTitles), "imported now, after the others")
                #expect(Array(added.dropFirst(LibraryMedia.treeTitles.count).prefix(2)) == ["Generated 130", "Generated 129"])
                #expect(Array(byOrder["modified"]?.dropFirst(LibraryMedia.treeTitles.count).prefix(2) ?? []) == ["Generated 130", "Generated 129"])
                #expect(Array(byOrder["user"]?.suffix(2) ?? []) == ["Generated 129", "Generated 130"], "the order they were added in")
                #expect(byOrder["author"]?.first == "Mp3 Saga", "Ann Author")
                #expect(Set(byOrder["author"]?.suffix(2) ?? []) == ["Flac Book", "Untagged Tales"], "no author: last")
                #expect(try await d.page("title", offset: UInt32(all), limit: 200).books.isEmpty)
                #expect(try await d.page("title", offset: 4_000_000_000, limit: 1).total == UInt32(all))

                // The calls without a size give the first page of 100.
                let listed = try await d.lib("ListBooks", [.int64(0), .boolean(true)])
                #expect(DaemonFixture.titles(listed.first) == Array(byTitle.prefix(100)))
                let found = try await d.lib("Find", [.vardict(["title": .string("generated")])])
                #expect(DaemonFixture.titles(found.first) == (1...100).map { String(format: "Generated %03d", $0) })
                let rest = try await d.search("", ["title": .string("generated")], offset: 100, limit: 200)
                #expect(rest.titles == (101...130).map { String(format: "Generated %03d", $0) })
                #expect(rest.total == 130)
                let twelve = try await d.search("generated 12").titles
                #expect(twelve.sorted() == ["Generated 120", "Generated 121", "Generated 122", "Generated 123", "Generated 124",
                                            "Generated 125", "Generated 126", "Generated 127", "Generated 128", "Generated 129"], "the start of a word")
            }
        }

        @Test func badPagesAndTextsAreRefusedSayingWhyAndChangeNothing() async throws {
            try await DaemonFixture.with { d in
                try await d.importOK(try await d.libraryMedia.tree)
                let snapshot = try await d.librarySnapshot()
                let mark = d.signals.mark
                let refusals: [(String, [DBusValue], String)] = [
                    ("ListBooksPage", [.int64(0), .boolean(true), .string("bogus"), .uint32(0), .uint32(10)],
                     "order is one of title, author, played, added, progress, modified, user, series, not 'bogus'"),
                    ("ListBooksPage", [.int64(0), .boolean(true), .string("title"), .uint32(0), .uint32(0)], "a page holds 1 to 200 books, not 0"),
                    ("ListBooksPage", [.int64(0), .boolean(true), .string("title"), .uint32(0), .uint32(201)], "a page holds 1 to 200 books, not 201"),
                    ("Search", [.string("mix"), .vardict([:]), .uint32(0), .uint32(0)], "a page holds 1 to 200 books, not 0"),
                    ("Search", [.string("mix"), .vardict([:]), .uint32(0), .uint32(UInt32.max)], "a page holds 1 to 200 books, not 4294967295"),
                    ("Search", [.string("?!-"), .vardict([:]), .uint32(0), .uint32(10)], "the search text has no letters or digits to look for"),
                    ("Search", [.string(tooLongName), .vardict([:]), .uint32(0), .uint32(10)], "the search text is longer than 1024 characters"),
                    ("Search", [.string("mix"), .vardict(["bogus": .string("x")]), .uint32(0), .uint32(10)],
                     "unknown query key 'bogus' (title, author, album, composer, genre, progress, series)"),
                    ("Search", [.string("mix"), .vardict(["progress": .string("halfway")]), .uint32(0), .uint32(10)],
                     "progress is one of not-started, in-progress, finished, unfinished, not 'halfway'"),
                    ("ListBooksMatching", [.int64(0), .boolean(true), .vardict([:]), .string("bogus"), .uint32(0), .uint32(10)],
                     "order is one of title, author, played, added, progress, modified, user, series, not 'bogus'"),
                ]
                for (method, arguments, message) in refusals {
                    let failure = await d.failure(method, arguments)
                    #expect(failure?.name == Lib.invalidArgument, "\(method)\(arguments)")
                    #expect(failure?.message == message)
                }
                let unknownShelf = await d.failure("ListBooksPage", [.int64(999_999), .boolean(false), .string("title"), .uint32(0), .uint32(10)])
                #expect(unknownShelf?.name == Lib.notFound)
                #expect(unknownShelf?.message == "no shelf 999999")
                let invalidArgs = DBusErrors.invalidArgs
                await d.expectError(invalidArgs, "ListBooksPage", [.int64(0), .boolean(true), .string("title"), .int32(0), .uint32(10)])
                await d.expectError(invalidArgs, "ListBooksPage", [.int64(0), .boolean(true), .string("title")])
                await d.expectError(invalidArgs, "Search", [.string("mix"), .uint32(0), .uint32(10)])
                await d.expectError(invalidArgs, "Search", [.string("mix"), .vardict([:]), .int64(0), .int64(10)])
                try await d.expectNothingChanged(since: mark, snapshot: snapshot)
            }
        }
    }
}
