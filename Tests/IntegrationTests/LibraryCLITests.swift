import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Library {
    /// The library commands of `lectern`: import, shelf, book, play BOOK, bookmark, find.
    @Suite struct LibraryCLI {
        private static func json(_ text: String) -> Any? { try? JSONSerialization.jsonObject(with: Data(text.utf8)) }

        private static func noCrash(_ r: DaemonFixture.ToolResult, _ command: String) {
            for crash in ["Fatal error", "Stack dump", "backtrace", "Segmentation"] {
                #expect(!r.stderr.contains(crash), "lectern \(command): \(r.stderr)")
            }
        }

        /// A lecternd of another version (before a listed book was a struct: a dictionary each) still running after an
        /// upgrade: its books are not shown as "no books", the CLI says what to do.
        @Test func aDaemonListingBooksInAnotherFormIsToldApart() async throws {
            let bus = try PrivateBus()
            let server = try BusConnection(address: bus.address)
            let dictionaries = DBusType.array(.dictionary(key: .string, value: .variant))
            let page: DBusValue = .array(.dictionary(key: .string, value: .variant),
                                         [.vardict(["id": .int64(1), "title": .string("Old Format Book")])])
            let library = Interface("org.lectern.Library1", methods: [
                Method("ListBooksPage", in: [("shelf", .int64), ("recursive", .boolean), ("order", .string), ("offset", .uint32), ("limit", .uint32)],
                       out: [("books", dictionaries), ("total", .uint32)]) { _ in [page, .uint32(1)] },
                Method("Search", in: [("text", .string), ("query", .dictionary(key: .string, value: .variant)), ("offset", .uint32), ("limit", .uint32)],
                       out: [("books", dictionaries), ("total", .uint32)]) { _ in [page, .uint32(1)] },
            ])
            let object = try server.export(ObjectPath("/org/lectern/Lectern1")!, interfaces: [library])
            let serving = Task(executorPreference: BusConnection.callThread) { await server.serveCalls() }
            defer { serving.cancel(); withExtendedLifetime(object) {} }
            #expect(try await server.requestName("org.lectern.Lectern1") == .primaryOwner)
            for command in [["book", "list"], ["find", "old"]] {
                let r = try await DaemonFixture.runLectern(command, environment: bus.environment)
                #expect(r.status == 1, "lectern \(command.joined(separator: " ")): \(r.stdout) \(r.stderr)")
                #expect(r.stderr.contains("lists books in a form this lectern does not read"), "\(r.stderr)")
                #expect(r.stderr.contains("restart lecternd"), "\(r.stderr)")
                #expect(!r.stdout.contains("no books") && !r.stdout.contains("nothing matches"), "\(r.stdout)")
                Self.noCrash(r, command.joined(separator: " "))
            }
        }

        /// The same for any other reply of another form than the CLI reads: not shown as nothing, the CLI says what to do.
        @Test func aDaemonAnsweringInAnotherFormIsToldApart() async throws {
            let bus = try PrivateBus()
            let server = try BusConnection(address: bus.address)
            let player = Interface("org.lectern.Player1", methods: [
                Method("GetStatus", out: [("status", .string)]) { _ in [.string("Playing")] },
            ])
            let bookmarks = Interface("org.lectern.Bookmarks1", methods: [
                Method("ListBookmarks", in: [("book", .int64)], out: [("bookmarks", .array(.string))]) { _ in [.strings(["7"])] },
            ])
            let object = try server.export(ObjectPath("/org/lectern/Lectern1")!, interfaces: [player, bookmarks])
            let serving = Task(executorPreference: BusConnection.callThread) { await server.serveCalls() }
            defer { serving.cancel(); withExtendedLifetime(object) {} }
            #expect(try await server.requestName("org.lectern.Lectern1") == .primaryOwner)
            for (command, member) in [(["chapter"], "GetStatus"), (["bookmark", "list", "--book", "1"], "ListBookmarks")] {
                let r = try await DaemonFixture.runLectern(command, environment: bus.environment)
                #expect(r.status == 1, "lectern \(command.joined(separator: " ")): \(r.stdout) \(r.stderr)")
                #expect(r.stderr.contains("lecternd answers \(member) in a form this lectern does not read"), "\(r.stderr)")
                #expect(r.stderr.contains("restart lecternd"), "\(r.stderr)")
                #expect(r.stdout.isEmpty, "\(r.stdout)")
                Self.noCrash(r, command.joined(separator: " "))
            }
        }

        @Test func importOnATerminalDrawsAProgressBar() async throws {
            try await DaemonFixture.with { d in
                let media = try await d.libraryMedia
                let command = "\(builtExecutable("lectern").path) import '\(media.tree.path)'"
                let terminal = try Subprocess("script", ["-qfec", command, "/dev/null"], environment: d.environment,
                                              newProcessGroup: true)
                defer { terminal.kill() }
                #expect(await terminal.waitForExit(timeout: .seconds(30)) == 0)
                let output = await terminal.readAll(timeout: .seconds(2))
                let bars = output.components(separatedBy: "\r\u{1B}[2K[").dropFirst()
                #expect(!bars.isEmpty, "\(output.debugDescription)")
                #expect(bars.last.map { $0.contains("] ") && $0.contains(" files, ") && $0.contains(" files/s") } == true,
                        "\(output.debugDescription)")
                #expect(output.contains("imported \(LibraryMedia.treeTitles.count) books"), "\(output.debugDescription)")
            }
        }

        @Test func bookmarksGoOutToFilesAndComeBackWithoutDuplicates() async throws {
            try await DaemonFixture.with { d in
                let media = try await d.libraryMedia
                #expect(try await d.lectern("import", media.tree.path).status == 0)
                let saga = try await d.bookID(titled: "Mp3 Saga")
                let dir = try TemporaryDirectory(prefix: "lectern-marks")
                defer { dir.remove() }
                func count() async throws -> Int {
                    let r = try await d.lectern("bookmark", "list", "--book", "\(saga)", "--json")
                    return (Self.json(r.stdout) as? [Any])?.count ?? -1
                }
                // Two bookmarks as another library exported them.
                let source = dir.appending("in.json").path
                try """
                {"lectern-bookmarks": 1, "books": [{"title": "Mp3 Saga", "author": "Ann Author", "bookmarks": [
                  {"file": 1, "offset": 500000, "title": "Opening", "note": "a note, with \\"quotes\\"", "kind": "user",
                   "created": 1700000000000000},
                  {"file": 3, "offset": 250000, "title": "Last part"}]}]}
                """.write(toFile: source, atomically: true, encoding: .utf8)
                var r = try await d.lectern("bookmark", "import", source)
                #expect(r.status == 0 && r.stdout == "“Mp3 Saga”: 2 added", "\(r)")
                r = try await d.lectern("bookmark", "import", source)
                #expect(r.status == 0 && r.stdout == "“Mp3 Saga”: 0 added, 2 already there", "\(r)")
                #expect(try await count() == 2)

                // JSON out: lossless.
                let out = dir.appending("out.json").path
                r = try await d.lectern("bookmark", "export", "--book", "Mp3 Saga", "-o", out)
                #expect(r.status == 0, "\(r)")
                let exported = Self.json(try String(contentsOfFile: out, encoding: .utf8)) as? [String: Any]
                let book = (exported?["books"] as? [[String: Any]])?.first
                #expect(book?["title"] as? String == "Mp3 Saga" && book?["author"] as? String == "Ann Author")
                #expect((book?["files"] as? [String])?.count == 3)
                let first = (book?["bookmarks"] as? [[String: Any]])?.first
                #expect(first?["file"] as? Int == 1 && first?["offset"] as? Int == 500_000 && first?["title"] as? String == "Opening")
                #expect(first?["note"] as? String == "a note, with \"quotes\"" && first?["created"] as? Int == 1_700_000_000_000_000)

                // CSV out and back in: nothing new.
                let csv = dir.appending("out.csv").path
                #expect(try await d.lectern("bookmark", "export", "--book", "Mp3 Saga", "--format", "csv", "-o", csv).status == 0)
                let table = try String(contentsOfFile: csv, encoding: .utf8)
                #expect(table.hasPrefix("book,author,file,position,title,note,kind,created\n"))
                #expect(table.contains("Mp3 Saga,Ann Author,1,0.500000,Opening,\"a note, with \"\"quotes\"\"\",user,2023-11-14T22:13:20Z"),
                        "\(table)")
                r = try await d.lectern("bookmark", "import", csv)
                #expect(r.stdout == "“Mp3 Saga”: 0 added, 2 already there", "\(r)")

                // Audacity labels at the book's time, and a label added there comes back as a bookmark.
                let labels = dir.appending("labels.txt").path
                #expect(try await d.lectern("bookmark", "export", "--book", "Mp3 Saga", "--format", "audacity", "-o", labels).status == 0)
                var text = try String(contentsOfFile: labels, encoding: .utf8)
                #expect(text.hasPrefix("0.500000\t0.500000\tOpening\n"), "\(text)")
                text += "1.000000\t1.000000\tFrom Audacity\n"
                try text.write(toFile: labels, atomically: true, encoding: .utf8)
                r = try await d.lectern("bookmark", "import", labels, "--book", "Mp3 Saga")
                #expect(r.stdout == "book \(saga): 1 added, 2 already there", "\(r)")
                #expect(try await count() == 3)

                // A bookmark of a file the book doesn't have: refused, and none of the file's added.
                try """
                {"lectern-bookmarks": 1, "books": [{"title": "Mp3 Saga", "bookmarks": [
                  {"file": 1, "offset": 0, "title": "Fine"}, {"file": 9, "offset": 0, "title": "Nowhere"}]}]}
                """.write(toFile: source, atomically: true, encoding: .utf8)
                r = try await d.lectern("bookmark", "import", source)
                #expect(r.status == 1 && r.stderr.contains("the book has no file 9"), "\(r)")
                #expect(try await count() == 3)
                // Nor one past the end of its file.
                try """
                {"lectern-bookmarks": 1, "books": [{"title": "Mp3 Saga", "bookmarks": [{"file": 2, "offset": 3600000000, "title": "Late"}]}]}
                """.write(toFile: source, atomically: true, encoding: .utf8)
                r = try await d.lectern("bookmark", "import", source)
                #expect(r.status == 1 && r.stderr.contains("1:00:00 is past its end"), "\(r)")
                #expect(try await count() == 3)
            }
        }

        @Test func libraryCommands() async throws {
            try await DaemonFixture.with { d in
                let media = try await d.libraryMedia

                // import DIR --shelf A/B
                var r = try await d.lectern("import", media.tree.path, "--shelf", "A/B")
                #expect(r.status == 0, "lectern import: \(r)")
                #expect(r.stdout.hasPrefix("imported \(LibraryMedia.treeTitles.count) books"), "\(r.stdout)")
                for title in LibraryMedia.treeTitles { #expect(r.stdout.contains("] \(title)"), "\(title) in:\n\(r.stdout)") }
                #expect(r.stdout.contains("Mp3 Saga — Ann Author  (3 files, "), "\(r.stdout)")
                // Not on a terminal, the progress is plain lines on stderr, ending with every file.
                let progress = r.stderr.split(separator: "\n").filter { $0.hasPrefix("importing: ") }
                #expect(!progress.isEmpty && progress.allSatisfy { $0.contains(" files, ") && $0.hasSuffix(" files/s") },
                        "\(r.stderr)")
                let last = try #require(progress.last?.split(separator: " ")[1].split(separator: "/"), "\(r.stderr)")
                try #require(last.count == 2, "\(progress)")
                #expect(last[0] == last[1], "the last line counts every file: \(progress)")
                let shelves = try await d.allShelves()
                let a = shelves.first { $0["name"] == .string("A") }?["id"]?.int64 ?? -1
                let b = shelves.first { $0["name"] == .string("B") }?["id"]?.int64 ?? -1
                #expect(shelves.count == 2 && shelves.first { $0["name"] == .string("B") }?["parent"] == .int64(a))
                #expect(try await d.allBooks().allSatisfy { $0["shelf"] == .int64(b) })

                // A failed import: non-zero, the reason.
                r = try await d.lectern("import", media.noAudio.path)
                #expect(r.status != 0 && r.stderr.contains("no audio files"), "\(r)")
                Self.noCrash(r, "import noaudio")

                // shelf list: a tree, and JSON.
                r = try await d.lectern("shelf", "list")
                #expect(r.status == 0)
                #expect(r.stdout.split(separator: "\n") == ["A  [\(a)]", "  B  [\(b)]"], "\(r.stdout)")
                r = try await d.lectern("shelf", "list", "--json")
                let shelfJSON = Self.json(r.stdout) as? [[String: Any]]
                #expect(shelfJSON?.count == 2, "\(r.stdout)")
                #expect(shelfJSON?.contains { $0["name"] as? String == "B" && ($0["parent"] as? NSNumber)?.int64Value == a && ($0["id"] as? NSNumber)?.int64Value == b } == true, "\(r.stdout)")

                // book list --json: every book with its id and title.
                r = try await d.lectern("book", "list", "--json")
                #expect(r.status == 0)
                let books = Self.json(r.stdout) as? [[String: Any]]
                #expect(books?.compactMap { $0["title"] as? String } == LibraryMedia.treeTitles, "\(r.stdout)")
                let ids = books?.compactMap { ($0["id"] as? NSNumber)?.int64Value } ?? []
                #expect(Set(ids) == Set(try await d.allBooks().compactMap { $0["id"]?.int64 }))
                r = try await d.lectern("book", "list", "--shelf", "A")
                #expect(r.stdout == "no books", "only B holds books: \(r.stdout)")
                r = try await d.lectern("book", "list", "--shelf", "A", "--recursive")
                #expect(r.stdout.split(separator: "\n").count == LibraryMedia.treeTitles.count, "\(r.stdout)")

                // book show ID
                let saga = try await d.bookID(titled: "Mp3 Saga")
                r = try await d.lectern("book", "show", "\(saga)")
                #expect(r.status == 0, "\(r)")
                let lines = r.stdout.split(separator: "\n").map(String.init)
                #expect(lines.first?.hasPrefix("[\(saga)] Mp3 Saga — Ann Author") == true, "\(r.stdout)")
                #expect(lines.dropFirst().prefix(3).map { $0.contains(". [") } == [true, true, true], "\(r.stdout)")
                #expect(lines.count > 3 && lines[1].contains("1. [") && lines[1].contains("Part One") && lines[3].contains("Part Three"), "\(r.stdout)")
                r = try await d.lectern("book", "show", "987654")
                #expect(r.status != 0 && r.stderr.contains("no book 987654"), "\(r)")
                Self.noCrash(r, "book show 987654")

                // play TITLE-FRAGMENT: one match plays it; several or none fail clearly.
                r = try await d.lectern("play", "mix")
                #expect(r.status != 0, "an ambiguous fragment: \(r)")
                #expect(r.stderr.contains("matches 2 books") && r.stderr.contains("Alpha Mix") && r.stderr.contains("Beta Mix"), "\(r.stderr)")
                #expect(r.stderr.split(separator: "\n").count <= 3, "\(r.stderr)")
                Self.noCrash(r, "play mix")
                r = try await d.lectern("play", "no such book")
                #expect(r.status != 0 && r.stderr.contains("no book matches"), "\(r)")
                #expect(try await d.currentBook() == 0)
                r = try await d.lectern("play", "saga")
                #expect(r.status == 0, "\(r)")
                #expect(try await d.waitForStatus("Playing") == "Playing")
                #expect(try await d.currentBook() == saga)
                #expect(try await d.waitForURL(endingWith: "/Saga/b.mp3")?.hasSuffix("/Saga/b.mp3") == true)

                // bookmark add / list
                r = try await d.lectern("bookmark", "add", "x", "--note", "y")
                #expect(r.status == 0, "\(r)")
                let bookmark = Int64(r.stdout)
                #expect(bookmark != nil, "bookmark add printed \(r.stdout)")
                r = try await d.lectern("bookmark", "list", "--json")
                let marks = Self.json(r.stdout) as? [[String: Any]]
                #expect(marks?.count == 1, "\(r.stdout)")
                #expect(marks?.first?["title"] as? String == "x" && marks?.first?["note"] as? String == "y", "\(r.stdout)")
                #expect((marks?.first?["id"] as? NSNumber)?.int64Value == bookmark)
                #expect((marks?.first?["book"] as? NSNumber)?.int64Value == saga)
                r = try await d.lectern("bookmark", "list")
                #expect(r.stdout.contains("[\(bookmark ?? 0)]") && r.stdout.contains("x — y"), "\(r.stdout)")
                r = try await d.lectern("bookmark", "list", "--book", "Disc Set")
                #expect(r.stdout == "no bookmarks", "\(r.stdout)")

                // find
                r = try await d.lectern("find", "--author", "cy")
                #expect(r.status == 0)
                #expect(r.stdout.split(separator: "\n").count == 2 && r.stdout.contains("Chaptered Book") && r.stdout.contains("Disc Set"), "\(r.stdout)")
                r = try await d.lectern("find", "--author", "cy", "--json")
                #expect((Self.json(r.stdout) as? [[String: Any]])?.compactMap { $0["title"] as? String } == ["Chaptered Book", "Disc Set"], "\(r.stdout)")
                r = try await d.lectern("find", "--group-by", "album")
                #expect(r.stdout.split(separator: "\n") == ["Alpha Mix  (1)", "Beta Mix  (1)", "Chaptered Book  (1)", "Disc Set  (1)", "Mp3 Saga  (1)"], "\(r.stdout)")
                r = try await d.lectern("find", "--group-by", "author", "--json")
                let groups = Self.json(r.stdout) as? [[String: Any]]
                #expect((groups?.first { $0["value"] as? String == "Cy Writer" }?["books"] as? NSNumber)?.intValue == 2, "\(r.stdout)")
                r = try await d.lectern("find", "--random", "book", "--author", "ann")
                #expect(r.status == 0 && r.stdout.contains("Mp3 Saga"), "\(r)")
                r = try await d.lectern("find", "--random", "file", "--title", "disc")
                #expect(r.status == 0 && r.stdout.contains("/Author/Book/CD"), "\(r)")
                r = try await d.lectern("find", "--title", "zzz")
                #expect(r.status == 0 && r.stdout == "nothing matches", "\(r)")
                r = try await d.lectern("find", "--random", "book", "--title", "zzz")
                #expect(r.status != 0 && !r.stderr.isEmpty, "\(r)")
                r = try await d.lectern("find", "--group-by", "bogus")
                #expect(r.status != 0 && r.stderr.contains("group by one of"), "\(r)")
                Self.noCrash(r, "find --group-by bogus")

                // find WORDS: full-text, with the options, a limit.
                r = try await d.lectern("find", "mix")
                #expect(r.status == 0 && Set(r.stdout.split(separator: "\n").map { $0.split(separator: "]")[1].split(separator: "—")[0] }) == [" Alpha Mix ", " Beta Mix "], "\(r)")
                r = try await d.lectern("find", "CY", "writ", "--json")
                #expect(Set((Self.json(r.stdout) as? [[String: Any]])?.compactMap { $0["title"] as? String } ?? []) == ["Chaptered Book", "Disc Set"], "\(r.stdout)")
                r = try await d.lectern("find", "mix", "--album", "beta")
                #expect(r.status == 0 && r.stdout.split(separator: "\n").count == 1 && r.stdout.contains("Beta Mix"), "\(r)")
                r = try await d.lectern("find", "mix", "--limit", "1")
                #expect(r.status == 0 && r.stdout.split(separator: "\n").count == 2 && r.stdout.hasSuffix("… and 1 more"), "\(r)")
                r = try await d.lectern("find", "?!")
                #expect(r.status != 0 && r.stderr.contains("the search text has no letters or digits"), "\(r)")
                r = try await d.lectern("find", "mix", "--group-by", "album")
                #expect(r.status != 0 && r.stderr.contains("take options, not words"), "\(r)")

                // book list --sort
                r = try await d.lectern("book", "list", "--sort", "author")
                #expect(r.status == 0 && r.stdout.split(separator: "\n").first?.contains("Mp3 Saga — Ann Author") == true, "\(r)")
                r = try await d.lectern("book", "list", "--sort", "played")
                #expect(r.status == 0 && r.stdout.split(separator: "\n").first?.contains("[\(saga)] Mp3 Saga") == true, "the one played: \(r)")
                r = try await d.lectern("book", "list", "--sort", "bogus")
                #expect(r.status != 0 && r.stderr.contains("order is one of title, author, played, added, progress"), "\(r)")
                Self.noCrash(r, "book list --sort bogus")
            }
        }

        /// A listener finishes one book by hand, has another in progress and a third not started; lists them by how far
        /// through they are, and puts the finished one away on a shelf with its place and bookmark.
        @Test func booksAreListedAndMovedByHowFarThroughTheyAre() async throws {
            try await DaemonFixture.with { d in
                let finished = try await d.importOK(d.media.mp3Book)[0]  // "The CLI Book"
                let playing = try await d.importOK(d.media.longBook)[0]  // "longbook"
                let untouched = try await d.importOK(d.media.book)[0]  // "book"
                /// The ids of the books `lectern` lists with `arguments`, each line "[id] title …"; none for "no books".
                func listed(_ arguments: String...) async throws -> [Int64] {
                    let r = try await DaemonFixture.runLectern(arguments, environment: d.environment)
                    #expect(r.status == 0, "lectern \(arguments.joined(separator: " ")): \(r)")
                    guard r.stdout != "no books" && r.stdout != "nothing matches" else { return [] }
                    return r.stdout.split(separator: "\n").map { line in Int64(line.dropFirst().prefix { $0 != "]" }) ?? -1 }
                }

                // The CLI Book heard a little, bookmarked; then longbook a little, paused.
                #expect(try await d.lectern("play", "The CLI Book").status == 0)
                try await d.waitForPosition(atLeast: 1_000_000)
                #expect(try await d.lectern("bookmark", "add", "Kept").status == 0)
                #expect(try await d.lectern("play", "longbook").status == 0)
                try await d.waitForURL(endingWith: "/longbook/1.ogg")
                try await d.waitForPosition(atLeast: 1_000_000)
                #expect(try await d.lectern("pause").status == 0)
                try await d.waitForStatus("Paused")
                let place = try await d.getBook(finished)
                #expect((place["position_offset"]?.int64 ?? 0) > 0, "\(place)")
                #expect(try await listed("book", "list", "--in-progress") == [playing, finished])

                var r = try await d.lectern("book", "finished", "The CLI Book")
                #expect(r.status == 0 && r.stdout.isEmpty, "\(r)")
                r = try await d.lectern("book", "list", "--finished")
                #expect(r.stdout.hasPrefix("[\(finished)] The CLI Book") && r.stdout.hasSuffix("  finished"), "\(r)")
                #expect(try await listed("book", "list", "--finished") == [finished])
                #expect(try await listed("book", "list", "--in-progress") == [playing])
                #expect(try await listed("book", "list", "--not-started") == [untouched])
                #expect(try await listed("book", "list", "--unfinished") == [untouched, playing])
                #expect(try await listed("book", "list") == [untouched, playing, finished])
                #expect(try await listed("find", "--finished") == [finished])
                #expect(try await listed("find", "ann", "--finished") == [finished])
                #expect(try await listed("find", "ann", "--unfinished") == [])
                // Finished by hand counts as finished in the statistics, as playing to the end does.
                r = try await d.lectern("stats")
                #expect(r.status == 0 && r.stdout.contains("finished:\n") && r.stdout.contains("The CLI Book"), "\(r)")

                // Put away, all at once: only its shelf changes.
                #expect(try await d.lectern("shelf", "create", "Done").status == 0)
                let done = try #require(try await d.allShelves().first { $0["name"]?.string == "Done" }?["id"]?.int64)
                let marks = try await d.bookmarks(of: finished)
                #expect(marks.map { $0["title"]?.string } == ["Kept"])
                var mark = d.signals.mark
                r = try await d.lectern("book", "move", "--finished", "--to", "Done")
                #expect(r.status == 0 && r.stdout == "moved 1 book to Done", "\(r)")
                let moved = try await d.getBook(finished)
                #expect(moved["shelf"]?.int64 == done)
                #expect(moved["position_file"] == place["position_file"] && moved["position_offset"] == place["position_offset"],
                        "its place: \(moved)")
                #expect(moved["finished"]?.bool == true)
                #expect(try await d.bookmarks(of: finished) == marks)
                #expect(try await d.getBook(playing)["shelf"]?.int64 == 0)
                #expect(try await d.getBook(untouched)["shelf"]?.int64 == 0)
                #expect(try await listed("book", "list", "--shelf", "Done") == [finished])
                try await d.signals.barrier()
                #expect(d.librarySignals(since: mark).filter { $0.isLibrary("BookChanged") }.compactMap { $0.arguments.first?.int64 } == [finished])
                r = try await d.lectern("book", "move", "--finished", "--to", "Done")
                #expect(r.status == 0 && r.stdout == "moved 0 books to Done", "already there: \(r)")

                // Not finished again: in progress from its place.
                #expect(try await d.lectern("book", "unfinished", "The CLI Book").status == 0)
                #expect(try await listed("book", "list", "--finished") == [])
                #expect(try await listed("book", "list", "--in-progress") == [playing, finished])

                // Bad input changes nothing: the CLI's before the daemon is asked, the daemon's as InvalidArgument.
                for arguments in [["book", "move", "--to", "Done"], ["book", "move", "book", "--finished", "--to", "Done"],
                                  ["book", "list", "--finished", "--in-progress"], ["book", "move", "book", "--shelf", "Done"]] {
                    r = try await DaemonFixture.runLectern(arguments, environment: d.environment)
                    #expect(r.status == 64, "lectern \(arguments.joined(separator: " ")): \(r)")
                }
                r = try await d.lectern("book", "move", "--unfinished", "--to", "Nowhere")
                #expect(r.status == 1 && r.stderr.contains("no shelf \"Nowhere\""), "\(r)")
                mark = d.signals.mark
                let snapshot = try await d.librarySnapshot()
                let halfway: DBusValue = .vardict(["progress": .string("halfway")])
                let message = await busErrorMessage { try await d.lib("MoveBooks", [.int64(0), .boolean(true), halfway, .int64(done)]) }
                #expect(message == "\(Lib.invalidArgument): progress is one of not-started, in-progress, finished, unfinished, not 'halfway'")
                await d.expectError(Lib.invalidArgument, "ListBooksMatching", [.int64(0), .boolean(true), halfway, .string("title"), .uint32(0), .uint32(10)])
                await d.expectError(Lib.invalidArgument, "MoveBooks", [.int64(0), .boolean(true), .vardict(["progress": .boolean(true)]), .int64(done)])
                await d.expectError(Lib.notFound, "MoveBooks", [.int64(0), .boolean(true), .vardict(["progress": .string("unfinished")]), .int64(9_999)])
                try await d.expectNothingChanged(since: mark, snapshot: snapshot)
            }
        }
    }
}
