import DBus
import Foundation
import Testing
import TestSupport

extension DaemonFixture {
    /// Calls `method` on `interface` of /org/lectern/Lectern1 and expects the error `name`.
    func expectError(_ name: String, _ method: String, _ arguments: [DBusValue], interface: String = Lib.library,
                     sourceLocation: SourceLocation = #_sourceLocation) async {
        let got = await errorName { try await self.lib(method, arguments, interface: interface) }
        #expect(got == name, "\(interface).\(method)\(arguments): \(got ?? "succeeded"), expected \(name)",
                sourceLocation: sourceLocation)
    }

    /// After a series of failed calls: nothing changed, no library signal came, and the daemon still answers.
    func expectNothingChanged(since mark: Int, snapshot: [DBusValue], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await signals.barrier()
        #expect(librarySignals(since: mark).isEmpty, "signals after failed calls: \(librarySignals(since: mark))",
                sourceLocation: sourceLocation)
        #expect(try await librarySnapshot() == snapshot, "the library changed after failed calls", sourceLocation: sourceLocation)
        #expect(try await getAll(MPRIS.root)["Identity"] == .string("Lectern"), sourceLocation: sourceLocation)
        #expect(try await libProperty("DatabaseStatus") == .string("ok"), sourceLocation: sourceLocation)
    }
}

extension Integration.Library {
    /// org.lectern.Library1: every method, its errors and its signals, re-read through the API.
    @Suite struct LibraryAPI {
        @Test func shelvesCanBeCreatedRenamedMovedAndDeletedWithSignals() async throws {
            try await DaemonFixture.with { d in
                #expect(try await d.allShelves().isEmpty)
                var mark = d.signals.mark
                let fiction = try await d.lib("CreateShelf", [.string("Fiction"), .int64(0)]).first?.int64 ?? 0
                let fantasy = try await d.lib("CreateShelf", [.string("Fantasy"), .int64(fiction)]).first?.int64 ?? 0
                let epic = try await d.lib("CreateShelf", [.string("Epic"), .int64(fantasy)]).first?.int64 ?? 0
                try await d.signals.barrier()
                #expect(fiction > 0 && fantasy > 0 && epic > 0 && Set([fiction, fantasy, epic]).count == 3)
                #expect(d.librarySignals(since: mark).filter { $0.isLibrary("ShelvesChanged") }.count == 3)

                let top = try await d.lib("ListShelves", [.int64(0)]).first?.elements?.compactMap(\.stringKeyedDictionary) ?? []
                #expect(top == [["id": .int64(fiction), "parent": .int64(0), "name": .string("Fiction")]])
                let inFiction = try await d.lib("ListShelves", [.int64(fiction)]).first?.elements?.compactMap(\.stringKeyedDictionary) ?? []
                #expect(inFiction.map { $0["name"]?.string } == ["Fantasy"])
                #expect(inFiction.first?["parent"]?.int64 == fiction)
                #expect(Set(try await d.allShelves().compactMap { $0["id"]?.int64 }) == [fiction, fantasy, epic])

                mark = d.signals.mark
                try await d.lib("RenameShelf", [.int64(fantasy), .string("High Fantasy")])
                try await d.signals.barrier()
                #expect(d.librarySignals(since: mark).map(\.member) == ["ShelvesChanged"])
                #expect(try await d.allShelves().first { $0["id"]?.int64 == fantasy }?["name"]?.string == "High Fantasy")

                mark = d.signals.mark
                try await d.lib("MoveShelf", [.int64(epic), .int64(0)])
                try await d.signals.barrier()
                #expect(d.librarySignals(since: mark).map(\.member) == ["ShelvesChanged"])
                let topNames = try await d.lib("ListShelves", [.int64(0)]).first?.elements?.compactMap { $0.stringKeyedDictionary?["name"]?.string }
                #expect(topNames == ["Epic", "Fiction"])
                try await d.lib("MoveShelf", [.int64(epic), .int64(fantasy)])
                #expect(try await d.allShelves().first { $0["id"]?.int64 == epic }?["parent"]?.int64 == fantasy)

                // An empty shelf goes without `recursive`.
                try await d.signals.barrier()  // the previous call's signal is recorded before the mark
                mark = d.signals.mark
                try await d.lib("DeleteShelf", [.int64(epic), .boolean(false)])
                try await d.signals.barrier()
                #expect(d.librarySignals(since: mark).map(\.member) == ["ShelvesChanged"])
                #expect(Set(try await d.allShelves().compactMap { $0["id"]?.int64 }) == [fiction, fantasy])
                // A shelf holding shelves goes with it, and takes them along.
                try await d.lib("DeleteShelf", [.int64(fiction), .boolean(true)])
                #expect(try await d.allShelves().isEmpty)
            }
        }

        @Test func shelfErrorsChangeNothing() async throws {
            try await DaemonFixture.with { d in
                let a = try await d.lib("CreateShelf", [.string("A"), .int64(0)]).first?.int64 ?? 0
                let b = try await d.lib("CreateShelf", [.string("B"), .int64(a)]).first?.int64 ?? 0
                let c = try await d.lib("CreateShelf", [.string("C"), .int64(b)]).first?.int64 ?? 0
                let other = try await d.lib("CreateShelf", [.string("Other"), .int64(0)]).first?.int64 ?? 0
                let twin = try await d.lib("CreateShelf", [.string("A"), .int64(other)]).first?.int64 ?? 0
                let snapshot = try await d.librarySnapshot()
                let mark = d.signals.mark
                let unknown: Int64 = 987_654

                for name in ["", "   ", "\n\t", tooLongName] {
                    await d.expectError(Lib.invalidArgument, "CreateShelf", [.string(name), .int64(0)])
                    await d.expectError(Lib.invalidArgument, "RenameShelf", [.int64(a), .string(name)])
                }
                await d.expectError(Lib.invalidArgument, "CreateShelf", [.string("A"), .int64(0)])   // taken
                await d.expectError(Lib.invalidArgument, "RenameShelf", [.int64(other), .string("A")])  // taken
                await d.expectError(Lib.invalidArgument, "MoveShelf", [.int64(twin), .int64(0)])  // "A" is taken at the top
                await d.expectError(Lib.notFound, "CreateShelf", [.string("X"), .int64(unknown)])
                await d.expectError(Lib.notFound, "RenameShelf", [.int64(unknown), .string("X")])
                await d.expectError(Lib.invalidArgument, "MoveShelf", [.int64(a), .int64(a)])       // into itself
                await d.expectError(Lib.invalidArgument, "MoveShelf", [.int64(a), .int64(b)])       // into its child
                await d.expectError(Lib.invalidArgument, "MoveShelf", [.int64(a), .int64(c)])       // into a grandchild
                await d.expectError(Lib.notFound, "MoveShelf", [.int64(unknown), .int64(0)])
                await d.expectError(Lib.notFound, "MoveShelf", [.int64(a), .int64(unknown)])
                await d.expectError(Lib.invalidArgument, "DeleteShelf", [.int64(a), .boolean(false)])  // not empty
                await d.expectError(Lib.notFound, "DeleteShelf", [.int64(unknown), .boolean(true)])
                await d.expectError(Lib.notFound, "ListBooks", [.int64(unknown), .boolean(false)])

                // Wrong argument types are refused by the bus layer.
                let invalidArgs = DBusErrors.invalidArgs
                await d.expectError(invalidArgs, "CreateShelf", [.int64(0), .string("X")])
                await d.expectError(invalidArgs, "CreateShelf", [.string("X")])
                await d.expectError(invalidArgs, "ListShelves", [])
                await d.expectError(invalidArgs, "ListShelves", [.int32(0)])
                await d.expectError(invalidArgs, "RenameShelf", [.string("1"), .string("X")])
                await d.expectError(invalidArgs, "MoveShelf", [.int64(a), .uint64(0)])
                await d.expectError(invalidArgs, "DeleteShelf", [.int64(a), .string("true")])
                await d.expectError(invalidArgs, "ListAllShelves", [.int64(0)])

                try await d.expectNothingChanged(since: mark, snapshot: snapshot)
            }
        }

        @Test func listShelvesOfAnUnknownShelfIsNotFound() async throws {
            try await DaemonFixture.with { d in
                let got = await d.errorName { try await d.lib("ListShelves", [.int64(987_654)]) }
                // ListBooks of an unknown shelf is NotFound; ListShelves answers an empty list instead.
                #expect(got == Lib.notFound)
            }
        }

        @Test func booksCanBeRenamedMovedSetUpReorderedAndDeleted() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.book)[0]
                let mp3 = try await d.importOK(d.media.mp3Book)[0]
                #expect(try await d.libProperty("BookCount") == .uint32(2))

                // ListBooks, GetBook: the documented keys.
                let listed = try await d.allBooks()
                #expect(listed.compactMap { $0["title"]?.string } == ["book", "The CLI Book"])
                // A listing gives what a list shows; GetBook adds the note and the settings (and Random, a book's).
                let keys: Set<String> = ["id", "shelf", "title", "author", "narrator", "cover", "source", "added", "modified",
                                         "last_played", "finished", "position_file", "position_offset", "files", "duration",
                                         "state", "missing"]
                let settings: Set<String> = ["note", "volume", "speed", "shuffle", "loop", "normalise", "loudness_gain",
                                             "skip_intro", "skip_outro", "loudness_target", "compress", "skip_silence",
                                             "silence_threshold", "silence_amount", "series", "series_part"]
                #expect(Set(DaemonFixture.listedFields) == keys)
                let paged = try await d.lib("Search", [.string("book"), .vardict([:]), .uint32(0), .uint32(10)]).first
                #expect(paged?.type.signature == "a(xxssssssuuxxxbxxx)", "a struct a book, in the documented order")
                #expect(DaemonFixture.books(paged).count == 2)
                let details = try await d.getBook(book)
                #expect(Set(details.keys) == keys.union(settings).union(["file_list"]))
                // Each field of a listed book is GetBook's value of the key of that name.
                for entry in DaemonFixture.books(paged) {
                    let got = try await d.getBook(try #require(entry["id"]?.int64))
                    for key in keys { #expect(entry[key] == got[key], "\(key): listed \(entry[key].map { "\($0)" } ?? "nil"), GetBook \(got[key].map { "\($0)" } ?? "nil")") }
                }
                let picked = try await d.lib("Random", [.vardict([:]), .string("book")]).first?.stringKeyedDictionary
                #expect(picked.map { Set($0.keys) } == keys.union(settings))
                #expect(details["files"] == .uint32(3))
                #expect(details["source"]?.string == d.media.book.standardizedFileURL.path)
                #expect(near(details["duration"]?.int64, 9_000_000, within: 300_000), "\(details["duration"].map { "\($0)" } ?? "nil")")
                #expect(details["volume"] == .double(1) && details["speed"] == .double(1) && details["loop"] == .string("None"))
                #expect(details["shuffle"] == .boolean(false) && details["finished"] == .boolean(false))
                #expect(details["last_played"] == .int64(0) && (details["added"]?.int64 ?? 0) > 0)
                let fileKeys: Set<String> = ["id", "book", "path", "index", "duration", "available", "state", "chapters"]
                for file in try await d.files(of: book) { #expect(fileKeys.isSubset(of: file.keys), "\(file.keys.sorted())") }

                // RenameBook
                var mark = d.signals.mark
                try await d.lib("RenameBook", [.int64(book), .string("  Renamed Book  ")])
                try await d.signals.barrier()
                #expect(d.librarySignals(since: mark).map(\.member) == ["BookChanged"])
                #expect(d.librarySignals(since: mark).first?.arguments == [.int64(book)])
                #expect(try await d.getBook(book)["title"] == .string("Renamed Book"))

                // MoveBook
                let shelf = try await d.lib("CreateShelf", [.string("Shelf"), .int64(0)]).first?.int64 ?? 0
                let inner = try await d.lib("CreateShelf", [.string("Inner"), .int64(shelf)]).first?.int64 ?? 0
                try await d.signals.barrier()  // CreateShelf's ShelvesChanged recorded before the mark
                mark = d.signals.mark
                try await d.lib("MoveBook", [.int64(book), .int64(inner)])
                try await d.signals.barrier()
                #expect(d.librarySignals(since: mark).map(\.member) == ["BookChanged"])
                func ids(_ shelf: Int64, _ recursive: Bool) async throws -> [Int64] {
                    DaemonFixture.books(try await d.lib("ListBooks", [.int64(shelf), .boolean(recursive)]).first).compactMap { $0["id"]?.int64 }
                }
                #expect(try await ids(inner, false) == [book])
                #expect(try await ids(shelf, false) == [])
                #expect(try await ids(shelf, true) == [book])
                #expect(try await ids(0, false) == [mp3])
                #expect(Set(try await ids(0, true)) == [book, mp3])
                #expect(try await d.getBook(book)["shelf"] == .int64(inner))
                try await d.lib("MoveBook", [.int64(book), .int64(0)])
                #expect(Set(try await ids(0, false)) == [book, mp3])

                // SetBookSettings, some keys at a time.
                try await d.signals.barrier()  // the previous call's signal is recorded before the mark
                mark = d.signals.mark
                try await d.lib("SetBookSettings", [.int64(book), .vardict(["speed": .double(1.5), "volume": .double(0.4)])])
                try await d.lib("SetBookSettings", [.int64(book), .vardict(["loop": .string("Track"), "shuffle": .boolean(true)])])
                try await d.signals.barrier()
                #expect(d.librarySignals(since: mark).filter { $0.isLibrary("BookChanged", book) }.count == 2)
                var b = try await d.getBook(book)
                #expect(b["speed"] == .double(1.5) && b["volume"] == .double(0.4))
                #expect(b["loop"] == .string("Track") && b["shuffle"] == .boolean(true))
                try await d.lib("SetBookSettings", [.int64(book), .vardict(["speed": .int64(2)])])   // an integer is a number too
                #expect(try await d.getBook(book)["speed"] == .double(2))

                // SetBookNote, SetBookFinished
                try await d.signals.barrier()  // the previous call's signal is recorded before the mark
                mark = d.signals.mark
                let note = "Line one\nLine two — ünïcödé " + String(repeating: "x", count: 5000)
                try await d.lib("SetBookNote", [.int64(book), .string(note)])
                try await d.lib("SetBookFinished", [.int64(book), .boolean(true)])
                try await d.signals.barrier()
                #expect(d.librarySignals(since: mark).filter { $0.isLibrary("BookChanged", book) }.count == 2)
                b = try await d.getBook(book)
                #expect(b["note"] == .string(note))
                #expect(b["finished"] == .boolean(true))
                try await d.lib("SetBookNote", [.int64(book), .string(String(repeating: "y", count: 100_000))])  // the limit itself

                // ReorderFiles
                let files = try await d.files(of: book)
                let fileIDs = files.compactMap { $0["id"]?.int64 }
                #expect(files.compactMap { $0["path"]?.string.map { ($0 as NSString).lastPathComponent } } == MediaLibrary.bookFiles)
                #expect(files.compactMap { $0["index"]?.int64 } == [0, 1, 2])
                try await d.signals.barrier()  // the previous call's signal is recorded before the mark
                mark = d.signals.mark
                let reversed = Array(fileIDs.reversed())
                try await d.lib("ReorderFiles", [.int64(book), .array(.int64, reversed.map(DBusValue.int64))])
                try await d.signals.barrier()
                #expect(d.librarySignals(since: mark).map(\.member) == ["BookChanged"])
                let after = try await d.files(of: book)
                #expect(after.compactMap { $0["id"]?.int64 } == reversed)
                #expect(after.compactMap { $0["index"]?.int64 } == [0, 1, 2])

                // DeleteBook
                mark = d.signals.mark
                try await d.lib("DeleteBook", [.int64(book)])
                try await d.signals.barrier()
                #expect(d.librarySignals(since: mark).map(\.member) == ["BookRemoved"])
                #expect(d.librarySignals(since: mark).first?.arguments == [.int64(book)])
                await d.expectError(Lib.notFound, "GetBook", [.int64(book)])
                #expect(try await d.allBooks().compactMap { $0["id"]?.int64 } == [mp3])
                #expect(try await d.libProperty("BookCount") == .uint32(1))
                // The audio files on disk are untouched.
                #expect(FileManager.default.fileExists(atPath: d.media.book.appendingPathComponent("1.ogg").path))
            }
        }

        @Test func bookErrorsChangeNothing() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.book)[0]
                try await d.importOK(d.media.mp3Book)
                let fileIDs = try await d.files(of: book).compactMap { $0["id"]?.int64 }
                let otherFile = try await d.files(of: try await d.bookID(titled: "The CLI Book")).first?["id"]?.int64 ?? 0
                let snapshot = try await d.librarySnapshot()
                let mark = d.signals.mark
                let unknown: Int64 = 987_654
                let invalid = Lib.invalidArgument, notFound = Lib.notFound

                await d.expectError(notFound, "GetBook", [.int64(unknown)])
                await d.expectError(notFound, "GetBook", [.int64(0)])
                await d.expectError(notFound, "RenameBook", [.int64(unknown), .string("X")])
                for name in ["", "  ", tooLongName] {
                    await d.expectError(invalid, "RenameBook", [.int64(book), .string(name)])
                }
                await d.expectError(notFound, "MoveBook", [.int64(unknown), .int64(0)])
                await d.expectError(notFound, "MoveBook", [.int64(book), .int64(unknown)])
                await d.expectError(notFound, "DeleteBook", [.int64(unknown)])
                await d.expectError(notFound, "ReorderFiles", [.int64(unknown), .array(.int64, [])])
                for order in [[], Array(fileIDs.dropLast()), fileIDs + [fileIDs[0]], [fileIDs[0], fileIDs[0], fileIDs[1]],
                              Array(fileIDs.dropLast()) + [otherFile], fileIDs + [unknown]] {
                    await d.expectError(invalid, "ReorderFiles", [.int64(book), .array(.int64, order.map(DBusValue.int64))])
                }
                await d.expectError(notFound, "SetBookSettings", [.int64(unknown), .vardict(["speed": .double(1)])])
                for settings: [String: DBusValue] in [["speed": .double(10)], ["speed": .double(0.1)], ["speed": .double(.infinity)],
                                                      ["volume": .double(.nan)], ["volume": .double(-1)], ["volume": .double(11)],
                                                      ["loop": .string("Bogus")], ["loop": .string("track")], ["bogus": .double(1)],
                                                      ["volume": .string("loud")], ["shuffle": .string("yes")], ["loop": .boolean(true)],
                                                      ["speed": .double(1.5), "volume": .double(.nan)]] {
                    await d.expectError(invalid, "SetBookSettings", [.int64(book), .vardict(settings)])
                }
                await d.expectError(notFound, "SetBookNote", [.int64(unknown), .string("x")])
                await d.expectError(invalid, "SetBookNote", [.int64(book), .string(String(repeating: "z", count: 100_001))])
                await d.expectError(notFound, "SetBookFinished", [.int64(unknown), .boolean(true)])
                await d.expectError(notFound, "ActivateBook", [.int64(unknown), .boolean(true)])
                await d.expectError(invalid, "Import", [.string("relative/path"), .string("")])
                await d.expectError(invalid, "Import", [.string(""), .string("")])
                await d.expectError(notFound, "Import", [.string("/no/such/folder"), .string("")])
                await d.expectError(invalid, "Find", [.vardict(["bogus": .string("x")])])
                await d.expectError(invalid, "Find", [.vardict(["title": .int64(1)])])
                await d.expectError(invalid, "Group", [.vardict([:]), .string("bogus")])
                await d.expectError(invalid, "Group", [.vardict(["bogus": .string("x")]), .string("album")])
                await d.expectError(notFound, "Random", [.vardict(["title": .string("no such title")]), .string("book")])
                await d.expectError(notFound, "Random", [.vardict(["title": .string("no such title")]), .string("file")])
                await d.expectError(invalid, "Random", [.vardict([:]), .string("chapter")])

                let invalidArgs = DBusErrors.invalidArgs
                await d.expectError(invalidArgs, "GetBook", [.string("1")])
                await d.expectError(invalidArgs, "GetBook", [.int32(1)])
                await d.expectError(invalidArgs, "RenameBook", [.int64(book), .int64(1)])
                await d.expectError(invalidArgs, "MoveBook", [.int64(book)])
                await d.expectError(invalidArgs, "DeleteBook", [.uint64(UInt64(book))])
                await d.expectError(invalidArgs, "ReorderFiles", [.int64(book), .array(.int32, fileIDs.map { .int32(Int32($0)) })])
                await d.expectError(invalidArgs, "SetBookSettings", [.int64(book), .string("speed=1.5")])
                await d.expectError(invalidArgs, "SetBookSettings", [.int64(book), .dictionary(key: .string, value: .double, [.init(.string("speed"), .double(1.5))])])
                await d.expectError(invalidArgs, "SetBookNote", [.int64(book)])
                await d.expectError(invalidArgs, "SetBookFinished", [.int64(book), .int32(1)])
                await d.expectError(invalidArgs, "ActivateBook", [.int64(book)])
                await d.expectError(invalidArgs, "Import", [.string("/tmp")])
                await d.expectError(invalidArgs, "Find", [.strings(["title"])])
                await d.expectError(invalidArgs, "Group", [.vardict([:])])
                await d.expectError(invalidArgs, "Random", [.string("book"), .vardict([:])])
                await d.expectError(DBusErrors.unknownMethod, "NoSuchMethod", [])

                try await d.expectNothingChanged(since: mark, snapshot: snapshot)
                #expect(try await d.currentBook() == 0)
            }
        }

        @Test func findGroupAndRandom() async throws {
            try await DaemonFixture.with { d in
                let tree = try await d.importOK(try await d.libraryMedia.tree)
                #expect(tree.count == LibraryMedia.treeTitles.count)
                func find(_ query: [String: DBusValue]) async throws -> [String] {
                    DaemonFixture.titles(try await d.lib("Find", [.vardict(query)]).first)
                }
                #expect(try await find([:]) == LibraryMedia.treeTitles)
                #expect(try await find(["author": .string("cy writer")]) == ["Chaptered Book", "Disc Set"])
                #expect(try await find(["author": .string("ANN")]) == ["Mp3 Saga"])
                #expect(try await find(["title": .string("mix")]) == ["Alpha Mix", "Beta Mix"])
                #expect(try await find(["title": .string("mix"), "album": .string("beta")]) == ["Beta Mix"])
                #expect(try await find(["album": .string("%")]) == [])   // LIKE wildcards are literal
                #expect(try await find(["title": .string("_")]) == [])

                let groups = try await d.lib("Group", [.vardict([:]), .string("album")]).first?.elements?.compactMap(\.fields) ?? []
                let pairs = groups.map { "\($0[0].string ?? "?")=\($0[1].int64 ?? -1)" }
                #expect(pairs == ["Alpha Mix=1", "Beta Mix=1", "Chaptered Book=1", "Disc Set=1", "Mp3 Saga=1"])
                let authors = try await d.lib("Group", [.vardict(["title": .string("a")]), .string("author")]).first?.elements?
                    .compactMap(\.fields).map { "\($0[0].string ?? "?")=\($0[1].int64 ?? -1)" }
                // Titles with an "a": not "Disc Set"; the untagged books have no author.
                #expect(authors == ["Ann Author=1", "Bo Mixer=2", "Cy Writer=1"], "\(authors ?? [])")

                for _ in 0..<5 {
                    let book = try await d.lib("Random", [.vardict(["author": .string("Cy")]), .string("book")]).first?.stringKeyedDictionary
                    #expect(["Chaptered Book", "Disc Set"].contains(book?["title"]?.string ?? ""), "\(book ?? [:])")
                    let file = try await d.lib("Random", [.vardict(["title": .string("saga")]), .string("file")]).first?.stringKeyedDictionary
                    #expect(file?["path"]?.string?.contains("/tree/Saga/") == true, "\(file ?? [:])")
                    #expect(file?["available"] == .boolean(true))
                }
            }
        }

        @Test func deletingAShelfRecursivelyRemovesItsBooksAndBookmarks() async throws {
            try await DaemonFixture.with { d in
                let a = try await d.importOK(d.media.book, shelf: "Series/Discworld")[0]
                let b = try await d.importOK(d.media.shortBook, shelf: "Series")[0]
                let c = try await d.importOK(d.media.mp3Book)[0]
                let series = try await d.allShelves().first { $0["name"]?.string == "Series" }?["id"]?.int64 ?? 0
                let mark1 = try await d.marks("AddBookmark", [.int64(a), .string("one"), .string("")]).first?.int64 ?? 0
                #expect(mark1 > 0)
                let snapshot = try await d.librarySnapshot()
                await d.expectError(Lib.invalidArgument, "DeleteShelf", [.int64(series), .boolean(false)])
                #expect(try await d.librarySnapshot() == snapshot)

                let mark = d.signals.mark
                try await d.lib("DeleteShelf", [.int64(series), .boolean(true)])
                try await d.signals.barrier()
                let sent = d.librarySignals(since: mark)
                #expect(Set(sent.filter { $0.isLibrary("BookRemoved") }.compactMap { $0.arguments.first?.int64 }) == [a, b], "\(sent)")
                #expect(sent.filter { $0.isLibrary("BookRemoved") }.count == 2)
                #expect(sent.last?.member == "ShelvesChanged", "\(sent)")
                #expect(try await d.allShelves().isEmpty)
                #expect(try await d.allBooks().compactMap { $0["id"]?.int64 } == [c])
                await d.expectError(Lib.notFound, "GetBook", [.int64(a)])
                await d.expectError(Lib.notFound, "ListBookmarks", [.int64(a)], interface: Lib.bookmarks)
                await d.expectError(Lib.notFound, "RenameBookmark", [.int64(mark1), .string("x")], interface: Lib.bookmarks)
                #expect(try await d.libProperty("BookCount") == .uint32(1))
            }
        }

        @Test func deletingTheCurrentBookClearsCurrentBook() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook)[0]
                try await d.lib("ActivateBook", [.int64(book), .boolean(false)])
                #expect(try await d.currentBook() == book)
                try await d.signals.barrier()  // the previous call's signal is recorded before the mark
                let mark = d.signals.mark
                try await d.lib("DeleteBook", [.int64(book)])
                try await d.signals.barrier()
                #expect(try await d.currentBook() == 0)
                #expect(d.currentBookChanges(since: mark) == [0])
                #expect(try await d.getAll(MPRIS.playlists)["ActivePlaylist"]?.fields?.first == .boolean(false))
            }
        }

        @Test func deletingTheShelfOfTheCurrentBookClearsCurrentBook() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook, shelf: "Doomed")[0]
                let shelf = try await d.getBook(book)["shelf"]?.int64 ?? 0
                try await d.lib("ActivateBook", [.int64(book), .boolean(false)])
                #expect(try await d.currentBook() == book)
                try await d.lib("DeleteShelf", [.int64(shelf), .boolean(true)])
                try await d.signals.barrier()
                await d.expectError(Lib.notFound, "GetBook", [.int64(book)])
                let current = try await d.currentBook()
                let active = try await d.getAll(MPRIS.playlists)["ActivePlaylist"]?.fields?.first
                #expect(current == 0)
                #expect(active == .boolean(false))
            }
        }
    }
}
