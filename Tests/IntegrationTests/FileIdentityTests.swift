import DBus
import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

extension Integration.Library {
    /// A book's files renamed and moved, while the daemon runs or while it is stopped, found again by `lectern import`
    /// with the place and bookmarks; a re-import that reads only what changed; a reader crash during a parallel read.
    @Suite struct FileIdentity {
        /// The re-import test's 01-03.mp3 (8 s each, album "Reimport Album") copied into `name` of the test's folder.
        private static func makeBook(_ d: DaemonFixture, _ name: String) async throws -> URL {
            let source = try await d.libraryMedia.reimport
            let folder = d.directory.appending(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for file in ["01.mp3", "02.mp3", "03.mp3"] {
                try FileManager.default.copyItem(at: source.appendingPathComponent(file), to: folder.appendingPathComponent(file))
            }
            return folder
        }

        /// What the user did with a book: in `Mort` (``makeBook``) imported beside another, its place 3 s into 03.mp3,
        /// a bookmark there, a speed; then the other book is played. Its folder and id, the file's id, the saved
        /// offset and the bookmarks.
        private static func listenedBook(_ d: DaemonFixture) async throws
            -> (folder: URL, book: Int64, listened: (file: Int64, offset: Int64, marks: [[String: DBusValue]])) {
            let folder = try await makeBook(d, "Mort")
            let book = try await d.importOK(folder)[0]
            let other = try await d.importOK(d.media.book)[0]
            let third = try await d.fileID(of: book, endingWith: "/03.mp3")
            let saved = try await d.placeInThirdFile(of: book, third)
            try await d.marks("AddBookmark", [.int64(book), .string("Here"), .string("a note")])
            try await d.lib("SetBookSettings", [.int64(book), .vardict(["speed": .double(1.5)])])
            try await d.lib("ActivateBook", [.int64(other), .boolean(false)])
            let marks = try await d.bookmarks(of: book)
            #expect(marks.count == 1)
            return (folder, book, (third, saved, marks))
        }

        /// Renames 01-03.mp3 to "Part N.mp3" and moves their folder to `Moved/Mort Again`; the new folder.
        private static func renameAndMove(_ folder: URL, _ d: DaemonFixture) throws -> URL {
            let fm = FileManager.default
            for n in 1...3 {
                try fm.moveItem(at: folder.appendingPathComponent(String(format: "%02d.mp3", n)),
                                to: folder.appendingPathComponent("Part \(n).mp3"))
            }
            let moved = d.directory.appending("Moved/Mort Again")
            try fm.createDirectory(at: moved.deletingLastPathComponent(), withIntermediateDirectories: true)
            try fm.moveItem(at: folder, to: moved)
            return moved
        }

        /// The book, as `lectern import` of its new folder left it: the same id, its place, bookmark and speed, its
        /// files at their new paths; activated, it resumes in "Part 3.mp3" where it was.
        private static func expectFoundAgain(_ book: Int64, in moved: URL, _ listened: (file: Int64, offset: Int64, marks: [[String: DBusValue]]),
                                             books: Int, _ d: DaemonFixture) async throws {
            let imported = try await d.lectern("import", moved.path)
            #expect(imported.status == 0 && imported.stdout.hasPrefix("imported 1 book\n"), "\(imported)")
            #expect(try await d.allBooks().count == books)
            let b = try await d.getBook(book)
            #expect(b["position_file"] == .int64(listened.file))
            #expect(b["position_offset"] == .int64(listened.offset))
            #expect(b["speed"] == .double(1.5))
            #expect(b["source"] == .string(moved.path))
            #expect(try await d.bookmarks(of: book) == listened.marks)
            let files = try await d.files(of: book)
            #expect(files.compactMap { $0["path"]?.string } == (1...3).map { moved.appendingPathComponent("Part \($0).mp3").path })
            #expect(files.allSatisfy { $0["available"] == .boolean(true) })
            try await d.lib("ActivateBook", [.int64(book), .boolean(false)])
            #expect(try await d.waitForURL(endingWith: "/Part 3.mp3")?.hasSuffix("/Mort%20Again/Part%203.mp3") == true)
            #expect(near(try await d.waitForProperty("Position") { near($0.int64, listened.offset, within: 200_000) }.int64,
                         listened.offset, within: 200_000))
        }

        @Test func filesRenamedAndMovedWhileTheDaemonRuns() async throws {
            try await DaemonFixture.with { d in
                let (folder, book, listened) = try await Self.listenedBook(d)
                let moved = try Self.renameAndMove(folder, d)
                try await Self.expectFoundAgain(book, in: moved, listened, books: 2, d)

                // A copy of the folder elsewhere is the same book, not a second one.
                let copy = d.directory.appending("Backup/Mort Again")
                try FileManager.default.createDirectory(at: copy.deletingLastPathComponent(), withIntermediateDirectories: true)
                try FileManager.default.copyItem(at: moved, to: copy)
                let again = try await d.importFolder(copy)
                #expect(again.error == "" && again.books == [book], "\(again)")
                #expect(try await d.allBooks().count == 2)
                #expect(try await d.files(of: book).compactMap { $0["path"]?.string }.allSatisfy { $0.hasPrefix(moved.path + "/") })
                #expect(d.log.contains("left out files the library has in another folder"), "\(d.log)")
            }
        }

        @Test func filesRenamedAndMovedWhileTheDaemonIsStopped() async throws {
            try await DaemonFixture.with { d in
                let (folder, book, listened) = try await Self.listenedBook(d)
                try await d.lib("ActivateBook", [.int64(book), .boolean(false)])  // current when the daemon stops
                #expect(await d.stopDaemon() == 0)
                let moved = try Self.renameAndMove(folder, d)
                let restarted = try await d.startReplacementDaemon()
                // Its files are gone from where they were: the book can't resume until it is found again.
                #expect(try await d.getBook(book)["position_file"] == .int64(listened.file))
                try await Self.expectFoundAgain(book, in: moved, listened, books: 2, d)
                #expect(await d.stopReplacement(restarted) == 0)
            }
        }

        @Test func aReimportReadsOnlyTheFilesThatChanged() async throws {
            try await DaemonFixture.with { d in
                let folder = d.directory.appending("Changing")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let first = folder.appendingPathComponent("01.mp3"), variant = d.directory.appending("variant.mp3")
                for (url, title) in [(first, "Title One"), (variant, "Title Two"), (folder.appendingPathComponent("02.mp3"), "Second")] {
                    try await offThePool {
                        try AudioFiles.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-metadata", "title=\(title)",
                                               "-metadata", "album=Changing", "-c:a", "libmp3lame", url.path])
                    }
                }
                let fm = FileManager.default
                let size = { (url: URL) in (try? fm.attributesOfItem(atPath: url.path)[.size] as? Int) ?? -1 }
                try #require(size(first) == size(variant), "the two titles make files of one size")
                let book = try await d.importOK(folder)[0]
                let untouched = try await d.importOK(d.media.mp3Book)[0]
                try await d.lib("SetBookNote", [.int64(untouched), .string("mine")])
                let untouchedBefore = try await d.getBook(untouched)
                let title = { try await d.files(of: book).first?["title"]?.string }
                #expect(try await title() == "Title One")

                // The other title, with the size and modification time of the file it replaces: not read again, so
                // the library still says what it read before.
                var before = stat()
                try #require(stat(first.path, &before) == 0)
                try fm.removeItem(at: first)
                try fm.copyItem(at: variant, to: first)
                var times = [before.st_atim, before.st_mtim]  // to the nanosecond, as stat gives it
                try #require(utimensat(AT_FDCWD, first.path, &times, 0) == 0)
                #expect(try await d.importOK(folder) == [book])
                #expect(try await title() == "Title One")
                // Modified now, as any tag editor leaves it: read again, the new title appears.
                try fm.setAttributes([.modificationDate: Date()], ofItemAtPath: first.path)
                #expect(try await d.importOK(folder) == [book])
                #expect(try await title() == "Title Two")
                #expect(try await d.files(of: book).compactMap { $0["title"]?.string } == ["Title Two", "Second"])

                // The untouched book, imported again along with the rest: as it was.
                let again = try await d.importFolder(d.media.mp3Book)
                #expect(again.error == "" && again.books == [untouched])
                #expect(again.progress.last.map { $0.done == $0.total } == true, "\(again.progress)")
                var after = try await d.getBook(untouched)
                after["modified"] = untouchedBefore["modified"]
                #expect(after == untouchedBefore)
            }
        }

        @Test func aFileThatCrashesItsReaderIsSkippedWhileTheOthersAreRead() async throws {
            // A reader that passes each request to a real one, and crashes on a file named "crash...".
            let scripts = try TemporaryDirectory(prefix: "lectern-crash-one")
            let proxy = scripts.appending("proxy.py").path
            try """
                import os, signal, socket, struct, subprocess, sys
                daemon = socket.socket(fileno=0)
                mine, theirs = socket.socketpair()
                subprocess.Popen([sys.argv[1], "--media-reader"], stdin=theirs, close_fds=True)
                theirs.close()
                def exactly(s, n):
                    data = b""
                    while len(data) < n:
                        chunk = s.recv(n - len(data))
                        if not chunk:
                            sys.exit(0)
                        data += chunk
                    return data
                def message(s):
                    head = exactly(s, 4)
                    return head + exactly(s, struct.unpack("<I", head)[0])
                while True:
                    request = message(daemon)
                    if b"/crash" in request:
                        os.kill(os.getpid(), signal.SIGSEGV)
                    mine.sendall(request)
                    daemon.sendall(message(mine))
                """.write(toFile: proxy, atomically: true, encoding: .utf8)
            let reader = scripts.appending("reader").path
            try writeShellScript(at: reader, "exec python3 '\(proxy)' '\(builtExecutable("lecternd").path)'")
            try await DaemonFixture.with(daemonArguments: ["--media-reader-program", reader]) { d in
                let folder = d.directory.appending("Big")
                try FileManager.default.copyItem(at: try await d.libraryMedia.big, to: folder)
                try FileManager.default.copyItem(at: folder.appendingPathComponent("1.ogg"), to: folder.appendingPathComponent("crash.ogg"))
                let result = try await d.importFolder(folder)
                #expect(result.error == "" && result.books.count == 1, "\(result)")
                #expect(result.progress.last.map { $0.done == $0.total && $0.total == Int64(LibraryMedia.bigCount + 1) } == true)
                let paths = try await d.files(of: result.books.first ?? 0).compactMap { $0["path"]?.string }
                #expect(paths.count == LibraryMedia.bigCount)
                #expect(!paths.contains { $0.hasSuffix("/crash.ogg") })
                #expect(d.log.contains("the media reader stopped while reading a file"), "\(d.log)")
                #expect(d.log.contains("crash.ogg") && d.log.contains("killed by signal 11"), "\(d.log)")
            }
        }
    }
}
