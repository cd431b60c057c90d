import DBus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Integration.Library {
    /// The configuration's library folders, watched by the running daemon: a book copied in appears once its files
    /// are written, announced as an import; a file re-tagged in place changes its book; a book whose folder is
    /// removed keeps its place in the library, its files missing; a folder added to the configuration by a reload is
    /// watched. A file removed is missing (the book plays without it) and present again when back; files renamed and
    /// moved, with the daemon running or stopped, stay the book's; a book moved while stopped and played at start
    /// waits for the rescan to find it; a disk unmounted makes its books offline, back untouched when it is mounted
    /// again; folders beyond the watch limit are scanned; a burst of 1,000 files is ten books.
    @Suite struct WatchedFolders {
        @Test func aBookCopiedInAppearsAndFollowsItsTags() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let library = root.appending("Library")
            let later = root.appending("Later")
            for folder in [library, later] { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) }
            let config = root.appending("config.yaml").path
            try "library-folders: ['\(library.path)']\n".write(toFile: config, atomically: true, encoding: .utf8)

            // A book made elsewhere, as a listener's download is.
            let dune = root.appending("Dune")
            try FileManager.default.createDirectory(at: dune, withIntermediateDirectories: true)
            for (n, title) in ["Part One", "Part Two"].enumerated() {
                try await offThePool {
                    try AudioFiles.mp3(dune.appendingPathComponent("0\(n + 1).mp3"), seconds: 1,
                                       tags: .init(title: title, artist: "Frank Herbert", album: "Dune", track: n + 1))
                }
            }
            try await DaemonFixture.with(daemonArguments: ["--config", config]) { d in
                // Lectern's own API answers once the library folders are watched.
                #expect(try await d.configValues()["library-folders"]?.value == "[\(library.path)]")
                #expect(try await d.startupRescan(folders: 1).allSatisfy { $0.importedBooks.isEmpty }, "an empty library folder")
                var mark = try await d.signals.barrier()
                try FileManager.default.copyItem(at: dune, to: library.appendingPathComponent("Dune"))
                let finished = await d.signals.waitFor(since: mark, timeout: .seconds(30)) { $0.isImport }
                let imported = finished?.arguments[1].elements?.compactMap(\.int64) ?? []
                #expect(imported.count == 1, "\(String(describing: finished))\n\(d.log)")
                let book = try await d.bookID(titled: "Dune")
                #expect(imported == [book])
                #expect(try await d.files(of: book).compactMap { $0["title"]?.string } == ["Part One", "Part Two"])
                #expect(d.signals.since(mark).contains { $0.isLibrary("ImportProgress") }, "the import's progress is announced")

                // Re-tagged in place: the book follows.
                mark = try await d.signals.barrier()
                let retagged = root.appending("retagged.mp3")
                try await offThePool {
                    try AudioFiles.mp3(retagged, seconds: 1, tags: .init(title: "Prologue", artist: "Frank Herbert", album: "Dune", track: 1))
                }
                try Data(contentsOf: retagged).write(to: library.appendingPathComponent("Dune/01.mp3"))
                #expect(await d.signals.waitFor(since: mark, timeout: .seconds(30)) { $0.isImport } != nil)
                #expect(try await d.bookID(titled: "Dune") == book, "the same book")
                #expect(try await d.files(of: book).compactMap { $0["title"]?.string } == ["Prologue", "Part Two"])

                // A folder added to the configuration and reloaded is watched too.
                try "library-folders: ['\(library.path)', '\(later.path)']\n".write(toFile: config, atomically: true, encoding: .utf8)
                #expect(try await d.lectern("config", "reload").status == 0)
                mark = try await d.signals.barrier()
                let emma = later.appendingPathComponent("Emma")
                try FileManager.default.createDirectory(at: emma, withIntermediateDirectories: true)
                try await offThePool {
                    try AudioFiles.mp3(emma.appendingPathComponent("1.mp3"), seconds: 1, frequency: 523, tags: .init(title: "Volume I", album: "Emma"))
                }
                #expect(await d.signals.waitFor(since: mark, timeout: .seconds(30)) { $0.isImport } != nil)
                #expect(try await d.bookID(titled: "Emma") > 0)

                // Removed from the disk: the book stays, with its files listed, missing (its place and bookmarks go
                // nowhere).
                try FileManager.default.removeItem(at: library.appendingPathComponent("Dune"))
                let states = try await poll(timeout: .seconds(30), { try await d.files(of: book).compactMap { $0["state"]?.string } },
                                            until: { $0 == ["missing", "missing"] })
                #expect(states == ["missing", "missing"], "\(d.log)")
                #expect(try await d.bookID(titled: "Dune") == book)
            }
        }

        /// A book on two discs (a folder each): a file added to one disc is the same book's, not a book of that disc.
        @Test func aFileAddedToOneDiscOfABookIsThatBooks() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let library = root.appending("Library")
            let saga = root.appending("Saga")
            for disc in 1...2 {
                let folder = saga.appendingPathComponent("CD\(disc)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                try await offThePool {
                    try AudioFiles.mp3(folder.appendingPathComponent("1.mp3"), seconds: 1, frequency: 300 + 100 * disc,
                                       tags: .init(title: "Disc \(disc)", album: "Saga", track: 1, disc: disc))
                }
            }
            try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
            let config = root.appending("config.yaml").path
            try "library-folders: ['\(library.path)']\n".write(toFile: config, atomically: true, encoding: .utf8)
            try await DaemonFixture.with(daemonArguments: ["--config", config]) { d in
                #expect(try await d.configValues()["library-folders"]?.value == "[\(library.path)]")
                try await d.startupRescan(folders: 1)
                var mark = try await d.signals.barrier()
                try FileManager.default.copyItem(at: saga, to: library.appendingPathComponent("Saga"))
                #expect(await d.signals.waitFor(since: mark, timeout: .seconds(30)) { $0.isImport } != nil)
                let book = try await d.bookID(titled: "Saga")
                #expect(try await d.files(of: book).count == 2)

                // Into the second disc's folder.
                mark = try await d.signals.barrier()
                let extra = root.appending("extra.mp3")
                try await offThePool {
                    try AudioFiles.mp3(extra, seconds: 1, frequency: 650, tags: .init(title: "Disc 2, part 2", album: "Saga", track: 2, disc: 2))
                }
                try FileManager.default.copyItem(at: extra, to: library.appendingPathComponent("Saga/CD2/2.mp3"))
                #expect(await d.signals.waitFor(since: mark, timeout: .seconds(30)) { $0.isImport } != nil)
                #expect(try await d.allBooks().filter { $0["title"]?.string == "Saga" }.count == 1, "one book, not one a disc")
                #expect(try await d.files(of: book).compactMap { $0["title"]?.string } == ["Disc 1", "Disc 2", "Disc 2, part 2"])
            }
        }

        /// A library folder holding `books` (each a folder of 5 s MP3 files tagged with its album and track numbers, a
        /// tone of its own), written before the daemon starts; the config file naming it.
        static func library(in root: TemporaryDirectory, _ books: [(folder: String, album: String, files: Int)],
                            extra: String = "") async throws -> (library: URL, config: String) {
            let library = root.appending("Library")
            try await offThePool {
                for (index, book) in books.enumerated() {
                    let folder = library.appendingPathComponent(book.folder)
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    for n in 1...book.files {
                        try AudioFiles.mp3(folder.appendingPathComponent(String(format: "%02d.mp3", n)), seconds: 5,
                                           frequency: 300 + 40 * index + 7 * n,
                                           tags: .init(title: "\(book.album) \(n)", album: book.album, track: n))
                    }
                }
            }
            try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
            let config = root.appending("config.yaml").path
            try "library-folders: ['\(library.path)']\n\(extra)".write(toFile: config, atomically: true, encoding: .utf8)
            return (library, config)
        }

        @Test func aFileRemovedIsMissingLeftOutOfPlayAndPresentWhenBack() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let (_, config) = try await Self.library(in: root, [("Saga", "Saga", 4), ("Emma", "Emma", 1)])
            try await DaemonFixture.with(daemonArguments: ["--config", config]) { d in
                // Read at start-up, with no `lectern import`: announced as an import.
                let rescan = try await d.startupRescan(folders: 1)
                #expect(rescan.count == 1 && rescan[0].importedBooks.count == 2, "\(rescan)\n\(d.log)")
                #expect(d.signals.since(0).contains { $0.isLibrary("ImportProgress") })
                let book = try await d.bookID(titled: "Saga")
                let files = try await d.files(of: book)
                let third = files[2]["id"]?.int64 ?? -1
                try await d.placePausedInThirdFile(of: book, third)
                try await d.marks("AddBookmark", [.int64(book), .string("Here"), .string("")])
                let bookmarks = try await d.bookmarks(of: book)

                let mark = try await d.signals.barrier()
                let thirdPath = files[2]["path"]?.string ?? "?"
                let kept = root.appending("03.mp3")
                try FileManager.default.moveItem(atPath: thirdPath, toPath: kept.path)
                let states = try await poll(timeout: .seconds(30), { try await d.files(of: book).compactMap { $0["state"]?.string } },
                                            until: { $0.count == 4 && $0[2] == "missing" })
                #expect(states == ["present", "present", "missing", "present"], "\(d.log)")
                #expect(await d.signals.waitFor(since: mark) { $0.isLibrary("BookChanged", book) } != nil, "signalled too")
                let details = try await d.getBook(book)
                #expect(details["missing"] == .uint32(1) && details["state"] == .string("available") && details["files"] == .uint32(4))
                #expect(details["position_file"]?.int64 == third, "the place stays in the missing file")
                #expect(try await d.bookmarks(of: book) == bookmarks, "its bookmark stays")
                #expect(try await d.libProperty("MissingFiles") == .uint32(1))
                #expect(try await d.libProperty("OfflineBooks") == .uint32(0))
                #expect(try await d.lectern("book", "show", "Saga").stdout.contains("Saga 3  0:05 (missing)"))
                #expect(try await d.lectern("book", "list").stdout.contains("1 missing"))
                #expect(try await d.lectern("status").stdout.contains("library: 1 file missing"))

                // Played while missing: left out with its reason, the book going on with the file after the place.
                let reason = try await d.activateLeavingOut(thirdPath, of: book, startingWith: "/04.mp3")
                #expect(reason.hasPrefix("missing:"), "\(reason)")

                // Back at its path: present again, the same file.
                try FileManager.default.moveItem(atPath: kept.path, toPath: thirdPath)
                let back = try await poll(timeout: .seconds(30), { try await d.files(of: book) },
                                          until: { $0.count == 4 && $0[2]["state"]?.string == "present" })
                #expect(back.map { $0["id"] } == files.map { $0["id"] })
                #expect(back.compactMap { $0["state"]?.string } == Array(repeating: "present", count: 4))
                // Counted again once the import that found it is done (just after its files are written).
                #expect(try await poll(timeout: .seconds(3)) { try await d.libProperty("MissingFiles") } until: { $0 == .uint32(0) }
                        == .uint32(0))
            }
        }

        @Test func filesRenamedAndMovedRunningOrStoppedStayTheBooks() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let (library, config) = try await Self.library(in: root, [("Saga", "Saga", 3), ("Emma", "Emma", 1)])
            try await DaemonFixture.with(daemonArguments: ["--config", config]) { d in
                try await d.startupRescan(folders: 1)
                let book = try await d.bookID(titled: "Saga")
                let files = try await d.files(of: book)
                try await d.placePausedInThirdFile(of: book, files[2]["id"]?.int64 ?? -1)
                try await d.marks("AddBookmark", [.int64(book), .string("Here"), .string("")])
                let bookmarks = try await d.bookmarks(of: book)
                func expectSameBook(at folder: URL, names: [String], _ comment: Comment) async throws {
                    let paths = names.map { folder.appendingPathComponent($0).path }
                    let now = try await poll(timeout: .seconds(30), { try await d.files(of: book) }, until: { files in
                        files.compactMap { $0["path"]?.string } == paths && files.allSatisfy { $0["state"]?.string == "present" }
                    })
                    #expect(now.compactMap { $0["path"]?.string } == paths, comment)
                    #expect(now.allSatisfy { $0["state"]?.string == "present" }, comment)
                    #expect(now.map { $0["id"] } == files.map { $0["id"] }, comment)
                    #expect(try await d.bookmarks(of: book) == bookmarks, comment)
                    #expect(try await d.getBook(book)["position_file"] == files[2]["id"], comment)
                    #expect(try await d.allBooks().count == 2, comment)
                }

                // Renamed, then the folder moved to another of the library, while watched.
                try FileManager.default.moveItem(at: library.appendingPathComponent("Saga/02.mp3"), to: library.appendingPathComponent("Saga/Two.mp3"))
                try await expectSameBook(at: library.appendingPathComponent("Saga"), names: ["01.mp3", "Two.mp3", "03.mp3"], "renamed")
                let moved = library.appendingPathComponent("Series/Saga")
                try FileManager.default.createDirectory(at: library.appendingPathComponent("Series"), withIntermediateDirectories: true)
                try FileManager.default.moveItem(at: library.appendingPathComponent("Saga"), to: moved)
                try await expectSameBook(at: moved, names: ["01.mp3", "Two.mp3", "03.mp3"], "moved")
                // The loaded book, opened again where its files are now: paused at its place, and played from there.
                let url = try await d.waitForURL(endingWith: "/Series/Saga/03.mp3")
                #expect(url?.hasSuffix("/Series/Saga/03.mp3") == true, "\(url ?? "no URL")\n\(d.log)")
                #expect(try await d.waitForStatus("Paused") == "Paused")
                try await d.call("Play")
                #expect(try await d.waitForStatus("Playing") == "Playing", "\(d.log)")
                try await d.call("Pause")
                #expect(try await d.waitForStatus("Paused") == "Paused")

                // Renamed and moved back while lecternd is stopped: read at its next start.
                #expect(await d.stopDaemon() == 0)
                try FileManager.default.moveItem(at: moved.appendingPathComponent("03.mp3"), to: moved.appendingPathComponent("Three.mp3"))
                try FileManager.default.moveItem(at: moved, to: library.appendingPathComponent("Saga"))
                let mark = d.signals.mark
                let replacement = try await d.startReplacementDaemon()
                try await d.startupRescan(folders: 1, since: mark)
                try await expectSameBook(at: library.appendingPathComponent("Saga"), names: ["01.mp3", "Two.mp3", "Three.mp3"], "while stopped")
                #expect(await d.stopReplacement(replacement) == 0)
            }
        }

        /// Every file of a book re-tagged and renamed after its new title, and its folder moved, at once (as a tagger
        /// that names files from their tags does), with lecternd running and while it is stopped: the same book, the
        /// same rows with their new titles, its place and bookmarks.
        @Test func filesRetaggedAndMovedRunningOrStoppedStayTheBooks() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let (library, config) = try await Self.library(in: root, [("Saga", "Saga", 3), ("Emma", "Emma", 1)])
            try await DaemonFixture.with(daemonArguments: ["--config", config]) { d in
                let (book, files, third, place, bookmarks) = try await d.listenedToTheThirdFile(of: "Saga")
                /// Re-tags the files of `folder` ("`title` N"), names each after its title, and moves the folder to `to`.
                func retagAndMove(_ folder: URL, to: URL, title: String) async throws {
                    try await offThePool {
                        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
                        for (n, name) in names.enumerated() {
                            try AudioFiles.retag(folder.appendingPathComponent(name), title: "\(title) \(n + 1)")
                            try FileManager.default.moveItem(at: folder.appendingPathComponent(name), to: folder.appendingPathComponent("\(title) \(n + 1).mp3"))
                        }
                        try FileManager.default.createDirectory(at: to.deletingLastPathComponent(), withIntermediateDirectories: true)
                        try FileManager.default.moveItem(at: folder, to: to)
                    }
                }
                func expectSameBook(at folder: URL, title: String, _ comment: Comment) async throws {
                    let paths = (1...3).map { folder.appendingPathComponent("\(title) \($0).mp3").path }
                    let now = try await poll(timeout: .seconds(30), { try await d.files(of: book) }, until: { files in
                        files.compactMap { $0["path"]?.string } == paths && files.allSatisfy { $0["state"]?.string == "present" }
                    })
                    #expect(now.compactMap { $0["path"]?.string } == paths, "\(comment)\n\(d.log)")
                    #expect(now.allSatisfy { $0["state"]?.string == "present" }, comment)
                    #expect(now.map { $0["id"] } == files.map { $0["id"] }, comment)
                    #expect(now.compactMap { $0["title"]?.string } == (1...3).map { "\(title) \($0)" }, comment)
                    #expect(try await d.bookmarks(of: book) == bookmarks, comment)
                    let details = try await d.getBook(book)
                    #expect(details["position_file"]?.int64 == third, comment)
                    #expect(near(details["position_offset"]?.int64, place, within: 300_000), "\(comment): \(details), not \(place)")
                    #expect(try await d.allBooks().count == 2, comment)
                }

                let moved = library.appendingPathComponent("Series/Saga (Remastered)")
                try await retagAndMove(library.appendingPathComponent("Saga"), to: moved, title: "Chapter")
                try await expectSameBook(at: moved, title: "Chapter", "while running")

                #expect(await d.stopDaemon() == 0)
                let back = library.appendingPathComponent("Saga")
                try await retagAndMove(moved, to: back, title: "Part")
                let mark = d.signals.mark
                let replacement = try await d.startReplacementDaemon()
                try await d.startupRescan(folders: 1, since: mark)
                try await expectSameBook(at: back, title: "Part", "while stopped")
                #expect(await d.stopReplacement(replacement) == 0)
            }
        }

        /// A book whose folder was moved and renamed within the library, and its files renamed, while lecternd was
        /// stopped, then played at once with `lectern play`, which starts lecternd through D-Bus activation: the
        /// activation waits for the start-up rescan to find the files (slowed here: each media reader starts 3 s late,
        /// so the rescan is still reading when ActivateBook comes), and the book plays from its place at its new paths
        /// as soon as `lectern play` returns; the same files, place and bookmark.
        @Test func aBookMovedWhileStoppedPlaysFromItsPlaceWhenPlayedAtStart() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let (library, config) = try await Self.library(in: root, [("Saga", "Saga", 4)])
            let slowReader = root.appending("slow-reader").path
            try writeShellScript(at: slowReader, "sleep 3; exec '\(builtExecutable("lecternd").path)' \"$@\"")
            try await DaemonFixture.with(daemonArguments: ["--config", config]) { d in
                let (book, files, third, place, bookmarks) = try await d.listenedToTheThirdFile(of: "Saga")
                #expect(await d.stopDaemon() == 0)
                let moved = library.appendingPathComponent("Series/Saga (Unabridged)")
                try FileManager.default.createDirectory(at: moved.deletingLastPathComponent(), withIntermediateDirectories: true)
                try FileManager.default.moveItem(at: library.appendingPathComponent("Saga"), to: moved)
                for n in 1...4 {
                    try FileManager.default.moveItem(at: moved.appendingPathComponent(String(format: "%02d.mp3", n)),
                                                     to: moved.appendingPathComponent("Part \(n).mp3"))
                }
                try await d.activatable(extra: ["--media-reader-program", slowReader])
                let play = try await d.lectern("play", "Saga")
                #expect(play.status == 0, "lectern play: \(play)\n\(d.log)")
                // As soon as it returns (without the wait, the rescan would still be reading for seconds more): the
                // place's file at its new path, playing. (The book restored at start, paused, had its files told
                // missing: the restore does not wait.)
                let url = try await d.waitForURL(endingWith: "/Series/Saga (Unabridged)/Part 3.mp3", timeout: .seconds(1))
                #expect(try await d.waitForStatus("Playing") == "Playing", "\(url ?? "no URL")\n\(d.log)")
                try await d.call("Pause")
                #expect(try await d.waitForStatus("Paused") == "Paused")
                // From its place, not from the file's start (2 s of the file were left: on a slow run it may have gone
                // on to the next one).
                if try await d.currentURL()?.hasSuffix("/Part%203.mp3") == true {
                    let position = try await d.position()
                    #expect(position >= place - 500_000, "from its place (\(place) µs): \(position)")
                }
                let now = try await d.files(of: book)
                #expect(now.map { $0["id"] } == files.map { $0["id"] })
                #expect(now.compactMap { $0["path"]?.string } == (1...4).map { moved.appendingPathComponent("Part \($0).mp3").path }, "\(now)")
                #expect(now.allSatisfy { $0["state"]?.string == "present" }, "\(now)")
                #expect(try await d.getBook(book)["position_file"]?.int64 == third)
                #expect(try await d.bookmarks(of: book) == bookmarks)
                try await d.stopActivated()
            }
        }

        /// While the start-up rescan reads (its media reader starts 12 s late: the rescan waits 10 s for it, then
        /// leaves the new file out), ActivateBook of a book whose files are on disk answers at once; of a book whose
        /// files went for good while lecternd was stopped, it waits for the rescan only as long as the bound
        /// (`--import-wait`, 4 s here), another client's call answered meanwhile, then does what it does for files
        /// not on disk (opens the book paused at its place). Once the rescan has marked them missing, it fails at once.
        @Test func anActivationWaitsForTheRescanOnlyForFilesNotOnDiskAndNoLongerThanTheBound() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let (library, config) = try await Self.library(in: root, [("Saga", "Saga", 2), ("Emma", "Emma", 1)])
            let later = root.appending("Later")
            try FileManager.default.createDirectory(at: later, withIntermediateDirectories: true)
            try await offThePool { try AudioFiles.mp3(later.appendingPathComponent("01.mp3"), seconds: 1, frequency: 900, tags: .init(album: "Later")) }
            let slowReader = root.appending("slow-reader").path
            try writeShellScript(at: slowReader, "sleep 12; exec '\(builtExecutable("lecternd").path)' \"$@\"")
            try await DaemonFixture.with(daemonArguments: ["--config", config, "--import-wait", "4"]) { d in
                try await d.startupRescan(folders: 1)
                let (saga, emma) = (try await d.bookID(titled: "Saga"), try await d.bookID(titled: "Emma"))
                #expect(await d.stopDaemon() == 0)
                // Emma gone for good; a new book for the rescan to read, slowly.
                try FileManager.default.removeItem(at: library.appendingPathComponent("Emma"))
                try FileManager.default.moveItem(at: later, to: library.appendingPathComponent("Later"))
                try await d.activatable(extra: ["--media-reader-program", slowReader])
                let mark = d.signals.mark
                let rescanDone = { d.signals.since(mark).contains { $0.isLibrary("ImportFinished") } }
                // Started by this first call (answered once the rescan is queued).
                _ = try await d.libProperty("CurrentBook")

                let clock = ContinuousClock()
                let present = try await clock.measure { try await d.lib("ActivateBook", [.int64(saga), .boolean(false)]) }
                #expect(!rescanDone() && present < .seconds(4), "answered at once: \(present)\n\(d.log)")
                #expect(try await d.libProperty("CurrentBook") == .int64(saga))

                let started = clock.now
                let waiting = Task {
                    try await d.lib("ActivateBook", [.int64(emma), .boolean(true)])
                    return clock.now
                }
                try await Task.sleep(for: .milliseconds(300))
                let other = try BusConnection(address: d.bus.address)
                defer { other.close() }
                _ = try await other.call(Lib.busName, path: Lib.path, interface: Lib.library, member: "GetBook", [.int64(saga)])
                let otherAnswered = clock.now
                let answered = try await waiting.value
                #expect(otherAnswered < answered, "another client's call waited for the activation")
                #expect(answered - started >= .seconds(3.9) && !rescanDone(), "waited \(answered - started), not for the rescan (10 s)\n\(d.log)")
                #expect(try await d.libProperty("CurrentBook") == .int64(emma))
                #expect(try await d.status() == "Paused", "opened paused at its place, its file not on disk")

                try await d.startupRescan(folders: 1, since: mark)
                // Marked missing once the rescan's import has found them gone (just after it says it is done).
                let files = try await poll(timeout: .seconds(3)) { try await d.files(of: emma) } until: {
                    $0.allSatisfy { $0["state"]?.string == "missing" }
                }
                #expect(files.allSatisfy { $0["state"]?.string == "missing" }, "\(files)")
                let failed = await clock.measure {
                    let error = await d.errorName { try await d.lib("ActivateBook", [.int64(emma), .boolean(true)]) }
                    #expect(error == Lib.invalidArgument, "\(error ?? "no error")")
                }
                #expect(failed < .seconds(4), "no import underway: no wait (\(failed))")
                try await d.stopActivated()
            }
        }

        /// The loaded book's file gone while lecternd was stopped: restored paused, the book keeps its place in that
        /// file (the load's failure moves nothing while paused), and Play once the file is back plays it there.
        @Test func thePausedBookKeepsItsPlaceInAFileGoneWhileStopped() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let (library, config) = try await Self.library(in: root, [("Saga", "Saga", 4)])
            try await DaemonFixture.with(daemonArguments: ["--config", config]) { d in
                let (book, _, third, place, _) = try await d.listenedToTheThirdFile(of: "Saga")
                #expect(await d.stopDaemon() == 0)
                let thirdPath = library.appendingPathComponent("Saga/03.mp3")
                let kept = root.appending("03.mp3")
                try FileManager.default.moveItem(at: thirdPath, to: kept)
                let mark = d.signals.mark
                let replacement = try await d.startReplacementDaemon()
                try await d.startupRescan(folders: 1, since: mark)
                let states = try await poll(timeout: .seconds(30), { try await d.files(of: book).compactMap { $0["state"]?.string } },
                                            until: { $0.count == 4 && $0[2] == "missing" })
                #expect(states == ["present", "present", "missing", "present"], "\(d.log)")
                #expect(try await d.waitForStatus("Paused") == "Paused")
                let details = try await d.getBook(book)
                #expect(details["position_file"]?.int64 == third, "the place stays in the missing file: \(details)\n\(d.log)")
                #expect(details["position_offset"]?.int64 == place, "\(details)")

                // Back, then played: the same file, at the place.
                try FileManager.default.moveItem(at: kept, to: thirdPath)
                _ = try await poll(timeout: .seconds(30), { try await d.files(of: book) },
                                   until: { $0.count == 4 && $0[2]["state"]?.string == "present" })
                try await d.call("Play")
                try await d.waitForURL(endingWith: "/03.mp3")
                #expect(try await d.waitForStatus("Playing") == "Playing", "\(d.log)")
                #expect(await d.stopReplacement(replacement) == 0)
            }
        }

        /// A disk in the library (a bind mount: the same files come back) unmounted: its book is offline, neither played
        /// nor its files marked missing, and back untouched once mounted again.
        @Test func aDiskUnmountedMakesItsBooksOfflineAndBackUntouched() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let (library, config) = try await Self.library(in: root, [("Home/Emma", "Emma", 1)])
            let disk = library.appendingPathComponent("Disk").path
            let source = try await Self.serialDisk(in: root, mountedOn: disk)
            defer { umount2(disk, Int32(MNT_DETACH)) }
            try await DaemonFixture.with(daemonArguments: ["--config", config, "--root-check", "0.2"]) { d in
                try await d.startupRescan(folders: 1)
                let book = try await d.bookID(titled: "Serial")
                let files = try await d.files(of: book)
                try await d.placePausedInThirdFile(of: book, files[2]["id"]?.int64 ?? -1)
                try await d.marks("AddBookmark", [.int64(book), .string("Here"), .string("")])
                try await d.lib("ActivateBook", [.int64(try await d.bookID(titled: "Emma")), .boolean(false)])
                let before = try await d.getBook(book).filter { $0.key != "modified" }
                let bookmarks = try await d.bookmarks(of: book)
                #expect(before["state"] == .string("available"))

                var mark = try await d.signals.barrier()
                // Lazily, as a disk pulled out: the player may still hold one of its files open.
                #expect(umount2(disk, Int32(MNT_DETACH)) == 0)
                let offline = try await poll(timeout: .seconds(30), { try await d.getBook(book) }, until: { $0["state"] == .string("offline") })
                #expect(offline["state"] == .string("offline"), "\(d.log)")
                #expect(offline["missing"] == .uint32(0))
                #expect(try await d.files(of: book).allSatisfy { $0["state"]?.string == "present" }, "not marked missing")
                #expect(await d.signals.waitFor(since: mark) { $0.isLibrary("BookChanged", book) } != nil, "signalled too")
                #expect(try await d.libProperty("OfflineBooks") == .uint32(1))
                #expect(try await d.libProperty("MissingFiles") == .uint32(0))
                #expect(try await d.getBook(try await d.bookID(titled: "Emma"))["state"] == .string("available"), "the rest of the library")
                #expect(try await d.lectern("book", "list").stdout.contains("offline"))
                #expect(try await d.lectern("status").stdout.contains("library: 1 book offline"))
                let refused = await busErrorName { try await d.lib("ActivateBook", [.int64(book), .boolean(false)]) }
                #expect(refused == "org.lectern.Error.InvalidArgument")

                mark = try await d.signals.barrier()
                try #require(mount(source.path, disk, nil, UInt(MS_BIND), nil) == 0)
                let back = try await poll(timeout: .seconds(30), { try await d.getBook(book) }, until: { $0["state"] == .string("available") })
                #expect(back.filter { $0.key != "modified" } == before, "back untouched")
                #expect(try await d.bookmarks(of: book) == bookmarks)
                #expect(try await d.libProperty("OfflineBooks") == .uint32(0))
                #expect(await d.signals.waitFor(since: mark, timeout: .seconds(30)) { $0.isLibrary("ImportFinished") } != nil, "read again")
                try await d.lib("ActivateBook", [.int64(book), .boolean(false)])
                try await d.waitForURL(endingWith: "/03.mp3")

                // Unmounted while lecternd is stopped: offline from its start (its mount is not mounted), its files not
                // marked missing; available again once the disk is mounted.
                #expect(await d.stopDaemon() == 0)
                #expect(umount2(disk, Int32(MNT_DETACH)) == 0)
                let restart = d.signals.mark
                let replacement = try await d.startReplacementDaemon()
                try await d.startupRescan(folders: 1, since: restart)
                #expect(try await d.getBook(book)["state"] == .string("offline"), "\(d.log)")
                #expect(try await d.files(of: book).allSatisfy { $0["state"]?.string == "present" }, "not marked missing")
                try #require(mount(source.path, disk, nil, UInt(MS_BIND), nil) == 0)
                let again = try await poll(timeout: .seconds(30), { try await d.getBook(book)["state"] }, until: { $0 == .string("available") })
                #expect(again == .string("available"), "\(d.log)")
                #expect(await d.stopReplacement(replacement) == 0)
            }
        }

        /// A folder `Source` holding the book "Serial" (three 5 s files), bind-mounted on `disk` (made), as a disk is
        /// mounted; the source.
        static func serialDisk(in root: TemporaryDirectory, mountedOn disk: String) async throws -> URL {
            let source = root.appending("Source")
            try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
            try await offThePool {
                for n in 1...3 {
                    let folder = source.appendingPathComponent("Serial")
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    try AudioFiles.mp3(folder.appendingPathComponent("0\(n).mp3"), seconds: 5, frequency: 900 + 11 * n,
                                       tags: .init(title: "Serial \(n)", album: "Serial", track: n))
                }
            }
            try #require(mount(source.path, disk, nil, UInt(MS_BIND), nil) == 0, "bind mount: \(String(cString: strerror(errno)))")
            return source
        }

        /// A book imported from a disk outside any library folder (none configured) is offline when lecternd starts
        /// with the disk unmounted, and available again once it is mounted (the mounts of offline books are looked
        /// at with the fallback scan, here every half second).
        @Test func aBookOutsideTheLibraryFoldersIsOfflineWhileItsDiskIsNotMounted() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let disk = root.appending("Disk").path
            let source = try await Self.serialDisk(in: root, mountedOn: disk)
            defer { umount2(disk, Int32(MNT_DETACH)) }
            try await DaemonFixture.with(daemonArguments: ["--fallback-scan", "0.5"]) { d in
                let book = try await d.importOK(URL(fileURLWithPath: disk + "/Serial"))[0]
                #expect(try await d.getBook(book)["state"] == .string("available"))
                #expect(await d.stopDaemon() == 0)
                #expect(umount2(disk, Int32(MNT_DETACH)) == 0)
                let replacement = try await d.startReplacementDaemon()
                let offline = try await poll(timeout: .seconds(30), { try await d.getBook(book)["state"] }, until: { $0 == .string("offline") })
                #expect(offline == .string("offline"), "\(d.log)")
                #expect(try await d.files(of: book).allSatisfy { $0["state"]?.string == "present" }, "not marked missing")
                try #require(mount(source.path, disk, nil, UInt(MS_BIND), nil) == 0)
                let back = try await poll(timeout: .seconds(30), { try await d.getBook(book)["state"] }, until: { $0 == .string("available") })
                #expect(back == .string("available"), "\(d.log)")
                #expect(await d.stopReplacement(replacement) == 0)
            }
        }

        /// With a watch limit of 2, the library's other folders are scanned (here every second): a book copied into
        /// one of them appears.
        @Test func foldersBeyondTheWatchLimitAreScanned() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let (library, config) = try await Self.library(in: root, [("A/Emma", "Emma", 1)])
            for folder in ["B", "C"] { try FileManager.default.createDirectory(at: library.appendingPathComponent(folder), withIntermediateDirectories: true) }
            let staged = root.appending("Staged")
            try FileManager.default.createDirectory(at: staged, withIntermediateDirectories: true)
            try await offThePool {
                try AudioFiles.mp3(staged.appendingPathComponent("1.mp3"), seconds: 1, frequency: 1234, tags: .init(title: "One", album: "Late", track: 1))
            }
            try await DaemonFixture.with(daemonArguments: ["--config", config, "--watch-limit", "2", "--fallback-scan", "1"]) { d in
                try await d.startupRescan(folders: 1)
                _ = try await poll({ d.log }, until: { $0.contains("too many folders to watch") })
                try FileManager.default.copyItem(at: staged, to: library.appendingPathComponent("C/Late"))
                let books = try await poll(timeout: .seconds(60), { try await d.allBooks().compactMap { $0["title"]?.string } },
                                           until: { $0.contains("Late") })
                #expect(books == ["Emma", "Late"], "\(d.log)")
                #expect(d.log.contains("it is beyond the watch limit"))
            }
        }

        @Test func aBurstOfAThousandFilesIsTenBooks() async throws {
            let root = try TemporaryDirectory(prefix: "lectern-watched")
            defer { root.remove() }
            let (library, config) = try await Self.library(in: root, [])
            // Ten books of 100 files: a tone of each book's own, copied (files alike within a folder are each a file).
            let staged = root.appending("Staged")
            for book in 1...10 {
                let folder = staged.appendingPathComponent("Book \(book)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let first = folder.appendingPathComponent("001.mp3")
                try await offThePool {
                    try AudioFiles.mp3(first, seconds: 0.2, frequency: 200 + 50 * book, tags: .init(album: "Burst \(book)"))
                }
                for file in 2...100 { try FileManager.default.copyItem(at: first, to: folder.appendingPathComponent(String(format: "%03d.mp3", file))) }
            }
            try await DaemonFixture.with(daemonArguments: ["--config", config]) { d in
                try await d.startupRescan(folders: 1)
                let mark = try await d.signals.barrier()
                for book in 1...10 {
                    try FileManager.default.copyItem(at: staged.appendingPathComponent("Book \(book)"), to: library.appendingPathComponent("Book \(book)"))
                }
                let books = try await poll(timeout: .seconds(240), every: .milliseconds(250), { try await d.allBooks() },
                                           until: { $0.count == 10 && $0.allSatisfy { $0["files"] == .uint32(100) } })
                #expect(books.compactMap { $0["title"]?.string }.sorted() == (1...10).map { "Burst \($0)" }.sorted(), "\(d.log)")
                #expect(books.allSatisfy { $0["files"] == .uint32(100) && $0["missing"] == .uint32(0) })
                // Read as a few imports once the copies settle, not one per file. An import's books are read before its
                // ImportFinished is sent: wait for the signals of the imports that brought them all.
                let ids = Set(books.compactMap { $0["id"]?.int64 })
                let imports = try await poll(timeout: .seconds(30), { d.signals.since(mark).filter { $0.isLibrary("ImportFinished") } },
                                             until: { Set($0.flatMap(\.importedBooks)).isSuperset(of: ids) })
                #expect(Set(imports.flatMap(\.importedBooks)).isSuperset(of: ids), "\(d.log)")
                #expect((1...20).contains(imports.count), "\(imports.count) imports for 1,000 files")
            }
        }
    }
}

extension RecordedSignal {
    /// An ImportFinished that brought books.
    var isImport: Bool { isLibrary("ImportFinished") && !importedBooks.isEmpty }

    /// The books of an ImportFinished.
    var importedBooks: [Int64] { arguments.count > 1 ? arguments[1].elements?.compactMap(\.int64) ?? [] : [] }
}

extension DaemonFixture {
    /// ``placeInThirdFile(of:_:)``, then a Pause it is known to have taken: playing, the place would move on into the
    /// next file while the test changes the files.
    func placePausedInThirdFile(of book: Int64, _ third: Int64) async throws {
        _ = try await placeInThirdFile(of: book, third)
        try await call("Pause")
        guard try await waitForStatus("Paused") == "Paused", try await getBook(book)["position_file"]?.int64 == third else {
            throw FixtureError("the book is not paused in its third file:\n\(log)")
        }
    }

    /// The book titled `title` as a listener left it, once the start-up rescan of the one library folder has read
    /// it: paused 3 s into its third file, with a bookmark there. Its id and files, the third's id, the place's offset
    /// and the bookmarks.
    func listenedToTheThirdFile(of title: String) async throws
        -> (book: Int64, files: [[String: DBusValue]], third: Int64, place: Int64, bookmarks: [[String: DBusValue]]) {
        try await startupRescan(folders: 1)
        let book = try await bookID(titled: title)
        let files = try await files(of: book)
        let third = files[2]["id"]?.int64 ?? -1
        try await placePausedInThirdFile(of: book, third)
        let place = try await getBook(book)["position_offset"]?.int64 ?? -1
        try await marks("AddBookmark", [.int64(book), .string("Here"), .string("")])
        return (book, files, third, place, try await bookmarks(of: book))
    }

    /// Activates `book` playing, expects it to start with the file whose path ends with `first`, and `left` to be told
    /// left out (FileFailed with file -1); the reason told.
    func activateLeavingOut(_ left: String, of book: Int64, startingWith first: String) async throws -> String {
        let mark = try await signals.barrier()
        try await lib("ActivateBook", [.int64(book), .boolean(true)])
        try await waitForURL(endingWith: first)
        let failed = await signals.waitFor(since: mark) { $0.member == "FileFailed" }
        let arguments = failed?.arguments ?? []
        guard arguments.count == 3, arguments[0] == .int32(-1), arguments[1].string == URL(fileURLWithPath: left).absoluteString else {
            throw FixtureError("no FileFailed(-1, \(left)): \(String(describing: failed))")
        }
        return arguments[2].string ?? ""
    }

    /// Makes the bus start lecternd when a client first calls org.lectern.Lectern1 (D-Bus activation, as `make
    /// install` sets it up): this build's, with the fixture's arguments and `extra`, its output in the fixture's log,
    /// with the fixture's folders. The fixture's own daemon must be stopped first.
    func activatable(extra: [String] = []) async throws {
        let script = directory.appending("lecternd-activated").path
        let command = ([lecterndPath] + daemonArguments + extra).map { "'\($0)'" }.joined(separator: " ")
        try writeShellScript(at: script, "exec \(command) >>'\(daemonLog.path)' 2>&1")
        try "[D-BUS Service]\nName=\(Lib.busName)\nExec=\(script)\n"
            .write(to: bus.servicesDirectory.appendingPathComponent("\(Lib.busName).service"), atomically: true, encoding: .utf8)
        try await setActivationEnvironment(environment.filter { $0.key.hasPrefix("XDG_") || $0.key == "GST_REGISTRY" }, on: client)
    }

    /// SIGTERM to the lecternd the bus started, and waits for its names to go.
    func stopActivated() async throws {
        kill(try await ownerPID(of: Lib.busName, on: client), SIGTERM)
        let owned = try await poll(timeout: .seconds(15), { try await nameHasOwner(MPRIS.busName) }, until: { !$0 })
        #expect(!owned, "lecternd stops on SIGTERM:\n\(log)")
    }

    /// The ImportFinished of the start-up rescan of `folders` library folders, since `mark` (the daemon's start);
    /// throws when fewer came in `timeout`.
    @discardableResult
    func startupRescan(folders: Int, since mark: Int = 0, timeout: Duration = .seconds(60)) async throws -> [RecordedSignal] {
        let finished = try await poll(timeout: timeout, { signals.since(mark).filter { $0.isLibrary("ImportFinished") } },
                                      until: { $0.count >= folders })
        guard finished.count >= folders else {
            throw FixtureError("\(finished.count) of \(folders) start-up imports finished in \(timeout):\n\(log)")
        }
        return Array(finished.prefix(folders))
    }
}
