import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Library {
    /// Library1.Import: generated trees become books, with signals; re-imports keep what the user did.
    @Suite struct LibraryImport {
        private static func names(_ files: [[String: DBusValue]], components: Int = 1) -> [String] {
            files.compactMap { $0["path"]?.string }.map { URL(fileURLWithPath: $0).pathComponents.suffix(components).joined(separator: "/") }
        }

        @Test func aGeneratedTreeBecomesBooks() async throws {
            try await DaemonFixture.with { d in
                let media = try await d.libraryMedia
                let mark = d.signals.mark
                let result = try await d.importFolder(media.tree)
                try await d.signals.barrier()
                #expect(result.error == "")
                #expect(result.books.count == LibraryMedia.treeTitles.count)
                // Progress: `done` never goes back and ends at `total` (every audio file, not the .txt).
                #expect(!result.progress.isEmpty)
                #expect(result.progress.allSatisfy { $0.total == Int64(LibraryMedia.treeFileCount) }, "\(result.progress)")
                #expect(zip(result.progress, result.progress.dropFirst()).allSatisfy { $0.done <= $1.done }, "\(result.progress)")
                #expect(result.progress.last?.done == Int64(LibraryMedia.treeFileCount))
                #expect(result.firstProgressIndex.map { $0 < result.finishedIndex } == true)
                // One BookChanged per imported book, before ImportFinished; shelves announced too.
                let sent = d.librarySignals(since: mark).filter { $0.index < result.finishedIndex }
                #expect(Set(sent.filter { $0.isLibrary("BookChanged") }.compactMap { $0.arguments.first?.int64 }) == Set(result.books))
                #expect(sent.filter { $0.isLibrary("BookChanged") }.count == result.books.count)

                let books = try await d.allBooks()
                #expect(books.compactMap { $0["title"]?.string } == LibraryMedia.treeTitles)
                #expect(Set(books.compactMap { $0["id"]?.int64 }) == Set(result.books))
                #expect(books.allSatisfy { $0["shelf"] == .int64(0) })
                #expect(try await d.libProperty("BookCount") == .uint32(UInt32(LibraryMedia.treeTitles.count)))
                // ImportFinished lists the books by title.
                let titleByID = Dictionary(uniqueKeysWithValues: books.map { ($0["id"]?.int64 ?? 0, $0["title"]?.string ?? "") })
                #expect(result.books.map { titleByID[$0] ?? "?" } == LibraryMedia.treeTitles)

                // Untagged: one book per folder, titled by the folder, files in natural order.
                let untagged = try await d.bookID(titled: "Untagged Tales")
                #expect(Self.names(try await d.files(of: untagged)) == ["1.ogg", "2.ogg", "10.ogg"])
                #expect(try await d.getBook(untagged)["author"] == .string(""))
                #expect(try await d.getBook(untagged)["source"] == .string(media.tree.appendingPathComponent("Untagged Tales").path))

                // FLAC
                let flac = try await d.files(of: try await d.bookID(titled: "Flac Book"))
                #expect(Self.names(flac) == ["1.flac", "2.flac"])
                #expect(flac.allSatisfy { near($0["duration"]?.int64, 1_000_000, within: 100_000) }, "\(flac)")

                // MP3 with tags: the album is the title, the artist the author, tracks give the order.
                let sagaID = try await d.bookID(titled: "Mp3 Saga")
                let saga = try await d.files(of: sagaID)
                #expect(try await d.getBook(sagaID)["author"] == .string("Ann Author"))
                #expect(Self.names(saga) == ["b.mp3", "a.mp3", "c.mp3"])
                #expect(saga.compactMap { $0["title"]?.string } == LibraryMedia.sagaTitles)
                #expect(saga.compactMap { $0["track"]?.int64 } == [1, 2, 3])
                #expect(saga.allSatisfy { $0["album"] == .string("Mp3 Saga") && $0["artist"] == .string("Ann Author") })

                // A folder mixing two albums: two books.
                #expect(Self.names(try await d.files(of: try await d.bookID(titled: "Alpha Mix"))) == ["m1.mp3", "m3.mp3"])
                #expect(Self.names(try await d.files(of: try await d.bookID(titled: "Beta Mix"))) == ["m2.mp3"])

                // Author/Book/CD1, CD2 with one album: one book, by disc then track.
                let discSetID = try await d.bookID(titled: "Disc Set")
                let discSet = try await d.files(of: discSetID)
                #expect(Self.names(discSet, components: 2) == ["CD1/01.mp3", "CD1/02.mp3", "CD2/01.mp3"])
                #expect(discSet.compactMap { $0["disc"]?.int64 } == [1, 1, 2])
                #expect(try await d.getBook(discSetID)["source"] == .string(media.tree.appendingPathComponent("Author/Book").path))

                // The m4b and its chapters.
                let m4bID = try await d.bookID(titled: "Chaptered Book")
                let m4b = try await d.files(of: m4bID)
                #expect(Self.names(m4b) == ["book.m4b"])
                #expect(try await d.getBook(m4bID)["author"] == .string("Cy Writer"))
                let chapters = m4b.first?["chapters"]?.elements?.compactMap(\.stringKeyedDictionary) ?? []
                #expect(chapters.compactMap { $0["title"]?.string } == LibraryMedia.chapters.map(\.title), "\(chapters)")
                for (got, want) in zip(chapters, LibraryMedia.chapters) {
                    #expect(near(got["start"]?.int64, Int64(want.start) * 1000, within: 50_000), "\(got)")
                    let end = got["end"]?.int64 ?? -2
                    #expect(end == -1 || near(end, Int64(want.end) * 1000, within: 50_000), "\(got)")
                }
                // A file without chapters has an empty list.
                #expect(flac.allSatisfy { $0["chapters"]?.elements?.isEmpty == true })
            }
        }

        @Test func aShelfPathIsCreatedAndReused() async throws {
            try await DaemonFixture.with { d in
                let mark = d.signals.mark
                let book = try await d.importOK(d.media.mp3Book, shelf: "Series/Discworld")[0]
                try await d.signals.barrier()
                #expect(d.librarySignals(since: mark).contains { $0.isLibrary("ShelvesChanged") })
                var shelves = try await d.allShelves()
                let series = shelves.first { $0["name"] == .string("Series") }
                let discworld = shelves.first { $0["name"] == .string("Discworld") }
                #expect(shelves.count == 2)
                #expect(series?["parent"] == .int64(0))
                #expect(discworld?["parent"] == series?["id"])
                #expect(try await d.getBook(book)["shelf"] == discworld?["id"])

                let other = try await d.importOK(d.media.book, shelf: "Series/Discworld")[0]
                shelves = try await d.allShelves()
                #expect(shelves.count == 2, "\(shelves)")
                #expect(try await d.getBook(other)["shelf"] == discworld?["id"])
                // Re-importing with no shelf path leaves the book where it is.
                #expect(try await d.importOK(d.media.mp3Book) == [book])
                #expect(try await d.getBook(book)["shelf"] == discworld?["id"])
                // A bad shelf path fails the import, not the call.
                let bad = try await d.importFolder(d.media.shortBook, shelf: "Series/" + tooLongName)
                #expect(bad.books.isEmpty && !bad.error.isEmpty, "\(bad)")
            }
        }

        @Test func aFolderWithoutAudioFailsWithAMessage() async throws {
            try await DaemonFixture.with { d in
                let media = try await d.libraryMedia
                let mark = d.signals.mark
                let result = try await d.importFolder(media.noAudio)
                try await d.signals.barrier()
                #expect(result.books.isEmpty)
                #expect(result.error.contains("no audio files"), "\(result.error)")
                #expect(result.error.contains(media.noAudio.path), "\(result.error)")
                #expect(!d.librarySignals(since: mark).contains { $0.isLibrary("BookChanged") })
                #expect(try await d.allBooks().isEmpty)
                // The daemon goes on: the next import works, with another job number.
                let next = try await d.importFolder(d.media.book)
                #expect(next.error == "" && next.books.count == 1)
                #expect(next.job != result.job)
            }
        }

        @Test func filesAreReadInChildProcessesThatLeaveWhenIdle() async throws {
            try await DaemonFixture.with { d in
                let result = try await d.importFolder(d.media.book)
                #expect(result.error == "" && result.books.count == 1, "\(result)")
                // The reader stays for the reads that follow, then leaves (5 s without one); the daemon stays.
                let readers = { () -> [pid_t] in
                    // Each thread lists the children it started.
                    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(d.daemon.pid)/task")) ?? []
                    let children = tasks.map {
                        (try? String(contentsOfFile: "/proc/\(d.daemon.pid)/task/\($0)/children", encoding: .utf8)) ?? ""
                    }.joined(separator: " ")
                    return children.split(separator: " ").compactMap { pid_t($0) }.filter { pid in
                        let arguments = (try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)) ?? ""
                        return arguments.split(separator: "\0").last == "--media-reader"
                    }
                }
                // One per core at most (two on two cores), reading a file each.
                #expect(readers().count <= max(2, ProcessInfo.processInfo.activeProcessorCount))
                #expect(d.log.contains("started the media reader"), "\(d.log)")
                #expect(try await poll(timeout: .seconds(15), readers, until: \.isEmpty).isEmpty, "the media reader did not leave")
                #expect(try await d.allBooks().count == 1)
            }
        }

        @Test func aMediaReaderThatCrashesCostsItsFilesNotTheDaemon() async throws {
            let scripts = try TemporaryDirectory(prefix: "lectern-crashing-reader")
            let crashing = scripts.appending("reader").path
            try writeShellScript(at: crashing, "head -c 4 >/dev/null; kill -SEGV $$")
            try await DaemonFixture.with(daemonArguments: ["--media-reader-program", crashing]) { d in
                let result = try await d.importFolder(d.media.book)
                #expect(result.books.isEmpty)
                #expect(result.error.contains("none of the files in \(d.media.book.path) can be played"), "\(result.error)")
                #expect(d.log.contains("the media reader stopped while reading a file"), "\(d.log)")
                #expect(d.log.contains("killed by signal 11, Segmentation fault"), "\(d.log)")
                let openError = await d.errorName { try await d.openURI(d.media.book) }
                #expect(openError == DBusErrors.invalidArgs)
                #expect(try await d.get("PlaybackStatus") == .string("Stopped"))
                #expect(try await d.allBooks().isEmpty)
            }
        }

        @Test func reimportKeepsTheBookAndWhatTheUserDid() async throws {
            try await DaemonFixture.with { d in
                let source = try await d.libraryMedia.reimport
                let folder = d.directory.appending("Reimport")
                let fm = FileManager.default
                try fm.createDirectory(at: folder, withIntermediateDirectories: true)
                for name in ["01.mp3", "02.mp3", "03.mp3"] {
                    try fm.copyItem(at: source.appendingPathComponent(name), to: folder.appendingPathComponent(name))
                }
                let book = try await d.importOK(folder)[0]
                let other = try await d.importOK(d.media.book)[0]
                let before = try await d.files(of: book)
                #expect(Self.names(before) == ["01.mp3", "02.mp3", "03.mp3"])
                let third = before[2]["id"]?.int64 ?? 0

                // Position 3 s into 03.mp3, a bookmark there, settings, a title of the user's.
                let saved = try await d.placeInThirdFile(of: book, third)
                let bookmark = try await d.marks("AddBookmark", [.int64(book), .string("Here"), .string("a note")]).first?.int64 ?? 0
                try await d.lib("ActivateBook", [.int64(other), .boolean(false)])
                try await d.lib("SetBookSettings", [.int64(book), .vardict(["speed": .double(1.5), "volume": .double(0.4),
                                                                             "loop": .string("Playlist")])])
                try await d.lib("RenameBook", [.int64(book), .string("My Own Title")])
                try await d.lib("SetBookNote", [.int64(book), .string("my note")])
                let marksBefore = try await d.bookmarks(of: book)
                #expect(marksBefore.count == 1)

                // Add 04, remove 02, retag 03 (title "Changed Title").
                try fm.copyItem(at: source.appendingPathComponent("04.mp3"), to: folder.appendingPathComponent("04.mp3"))
                try fm.removeItem(at: folder.appendingPathComponent("02.mp3"))
                try fm.removeItem(at: folder.appendingPathComponent("03.mp3"))
                try fm.copyItem(at: source.appendingPathComponent("03-retagged.mp3"), to: folder.appendingPathComponent("03.mp3"))

                let mark = d.signals.mark
                let again = try await d.importFolder(folder)
                try await d.signals.barrier()
                #expect(again.error == "")
                #expect(again.books == [book])
                #expect(d.librarySignals(since: mark).contains { $0.isLibrary("BookChanged", book) })
                #expect(try await d.libProperty("BookCount") == .uint32(2))

                let b = try await d.getBook(book)
                #expect(b["title"] == .string("My Own Title"))
                #expect(b["note"] == .string("my note"))
                #expect(b["speed"] == .double(1.5) && b["volume"] == .double(0.4) && b["loop"] == .string("Playlist"))
                #expect(b["position_file"] == .int64(third))
                #expect(b["position_offset"] == .int64(saved))
                #expect(try await d.bookmarks(of: book) == marksBefore)
                #expect(marksBefore.first?["id"] == .int64(bookmark))

                let after = try await d.files(of: book)
                #expect(Self.names(after) == ["01.mp3", "02.mp3", "03.mp3", "04.mp3"])
                #expect(after.compactMap { $0["index"]?.int64 } == [0, 1, 2, 3])
                #expect(after.compactMap { $0["available"]?.bool } == [true, false, true, true])
                #expect(Array(after.prefix(3).compactMap { $0["id"]?.int64 }) == before.compactMap { $0["id"]?.int64 })
                #expect(after[2]["title"] == .string("Changed Title"))
                #expect(b["files"] == .uint32(4))

                // Activating skips the missing file and resumes in 03.
                try await d.lib("ActivateBook", [.int64(book), .boolean(false)])
                #expect(try await d.waitForURL(endingWith: "/03.mp3")?.hasSuffix("/03.mp3") == true)
                #expect(near(try await d.waitForProperty("Position") { near($0.int64, saved, within: 200_000) }.int64, saved, within: 200_000))
            }
        }

        @Test func changingTheAlbumTagOfAFileMovesItToAnotherBook() async throws {
            try await DaemonFixture.with { d in
                let media = try await d.libraryMedia
                let folder = d.directory.appending("Retag")
                let fm = FileManager.default
                try fm.createDirectory(at: folder, withIntermediateDirectories: true)
                for name in ["01.mp3", "02.mp3"] {
                    try fm.copyItem(at: media.reimport.appendingPathComponent(name), to: folder.appendingPathComponent(name))
                }
                let book = try await d.importOK(folder)[0]
                // 02.mp3 now says it belongs to the album "Alpha Mix".
                try fm.removeItem(at: folder.appendingPathComponent("02.mp3"))
                try fm.copyItem(at: media.tree.appendingPathComponent("Mixed/m1.mp3"), to: folder.appendingPathComponent("02.mp3"))
                let again = try await d.importOK(folder)
                #expect(again.count == 2 && again.contains(book), "\(again)")
                let other = again.first { $0 != book } ?? 0
                #expect(try await d.getBook(other)["title"] == .string("Alpha Mix"))
                #expect(Self.names(try await d.files(of: other)) == ["02.mp3"])
                // The file is now in the other book; the first one keeps it listed, unavailable.
                let stale = try await d.files(of: book).first { $0["path"]?.string?.hasSuffix("/02.mp3") == true }
                #expect(stale?["available"] == .boolean(false), "\(stale ?? [:])")
                #expect(try await d.files(of: book).first?["available"] == .boolean(true))
            }
        }

        @Test func aLargeImportRunsOffTheCallPath() async throws {
            try await DaemonFixture.with { d in
                let media = try await d.libraryMedia
                try await d.openURI(d.media.long)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let mark = d.signals.mark
                let job = try await d.lib("Import", [.string(media.big.path), .string("")]).first
                // Once the import is under way, the daemon still answers player and library calls.
                let first = await d.signals.waitFor(since: mark, timeout: .seconds(20)) {
                    $0.isLibrary("ImportProgress") && $0.arguments.first == job
                }
                #expect(first != nil)
                var answered = 0
                for _ in 0..<5 {
                    #expect(try await d.get("PlaybackStatus") == .string("Playing"))
                    #expect(try await d.position() >= 0)
                    #expect(try await d.lib("ListShelves", [.int64(0)]).count == 1)
                    #expect(try await d.getAll(MPRIS.root)["Identity"] == .string("Lectern"))
                    answered += 1
                }
                let afterCalls = try await d.signals.barrier()
                let finished = await d.signals.waitFor(since: mark, timeout: .seconds(60)) {
                    $0.isLibrary("ImportFinished") && $0.arguments.first == job
                }
                #expect(answered == 5)
                // The calls were answered while the import still ran: it finished after them, and progress kept coming.
                #expect(finished.map { $0.index > afterCalls } == true, "the import finished before the calls were answered")
                let progress = d.signals.since(mark).filter { $0.isLibrary("ImportProgress") && $0.arguments.first == job }
                #expect(progress.contains { $0.index > afterCalls }, "no ImportProgress after the calls")
                #expect(progress.last?.arguments[1] == .uint32(UInt32(LibraryMedia.bigCount)))
                #expect(finished?.arguments[1].elements?.count == 1)
                #expect(try await d.files(of: finished?.arguments[1].elements?.first?.int64 ?? 0).count == LibraryMedia.bigCount)
                #expect(try await d.status() == "Playing")
            }
        }
    }
}
