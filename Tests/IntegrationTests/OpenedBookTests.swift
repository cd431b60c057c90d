import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Library {
    /// What is opened (`lectern open`, MPRIS OpenUri) is a book of the library, with everything a book has.
    @Suite struct OpenedBooks {
        /// The README's first example, then what a listener does next: every book command works on what was opened,
        /// and opening it again resumes it where it was, as the same book.
        @Test func anOpenedFolderIsABookWithEverythingABookHas() async throws {
            try await DaemonFixture.with { d in
                var r = try await d.lectern("open", d.media.mp3Book.path)
                #expect(r.status == 0, "lectern open: \(r)")
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let books = try await d.allBooks()
                #expect(books.map { $0["title"]?.string } == ["The CLI Book"], "\(books)")
                let book = try #require(books.first?["id"]?.int64)
                #expect(try await d.waitForCurrentBook(book) == book)

                r = try await d.lectern("jump", "2", "0:05")
                #expect(r.status == 0, "lectern jump: \(r)")
                #expect(try await d.waitForURL(endingWith: "/mp3book/02.mp3")?.hasSuffix("/02.mp3") == true)
                r = try await d.lectern("undo")
                #expect(r.status == 0, "lectern undo: \(r)")
                #expect(try await d.waitForURL(endingWith: "/mp3book/01.mp3")?.hasSuffix("/01.mp3") == true)

                r = try await d.lectern("bookmark", "add", "Where it begins")
                #expect(r.status == 0, "lectern bookmark add: \(r)")
                #expect(try await d.bookmarks(of: book).map { $0["title"]?.string } == ["Where it begins"])
                r = try await d.lectern("skip-silence", "on")
                #expect(r.status == 0, "lectern skip-silence on: \(r)")
                #expect(try await d.getBook(book)["skip_silence"] == .boolean(true))

                _ = try await d.waitForPosition(atLeast: 1_500_000)
                try await d.call("Pause")
                #expect(try await d.waitForStatus("Paused") == "Paused")
                let place = try await d.position()
                let first = try await d.fileID(of: book, endingWith: "/01.mp3")
                let saved = try await d.waitForSavedPosition(of: book, file: first, near: place)
                let sessions = try await Self.waitForHistory(d)
                #expect(sessions.first?["book"] as? Int == Int(book), "lectern history --json: \(sessions)")

                // Opened again (by URI, as playerctl does): the same book, where it was left.
                let mark = d.signals.mark
                try await d.openURI(d.media.mp3Book)
                let seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }?.seekedPosition
                #expect(near(seeked, saved, within: 300_000), "resumed at \(seeked ?? -1) µs, saved \(saved)")
                #expect(try await d.allBooks().count == 1)
                #expect(try await d.currentBook() == book)
                #expect(try await d.bookmarks(of: book).count == 1)
            }
        }

        /// A file of a book opened alone plays that book from the start of the file; the place it left is an undo
        /// step. The file its place is in resumes at the place. The book's other files stay as they are.
        @Test func aFileOfABookPlaysThatBookFromTheFile() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook)[0]
                let first = try await d.fileID(of: book, endingWith: "/longbook/1.ogg")
                try await d.lib("ActivateBook", [.int64(book), .boolean(false)])
                try await d.waitForURL(endingWith: "/longbook/1.ogg")
                try await d.setPosition(5_000_000)
                let saved = try await d.waitForSavedPosition(of: book, file: first, near: 5_000_000)

                try await d.openURI(d.media.longBook.appendingPathComponent("2.ogg"))
                #expect(try await d.waitForURL(endingWith: "/longbook/2.ogg")?.hasSuffix("/2.ogg") == true)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                #expect(try await d.position() < 2_000_000)
                #expect(try await d.currentBook() == book)
                #expect(try await d.allBooks().count == 1)
                let files = try await d.files(of: book)
                #expect(files.count == MediaLibrary.longBookFiles.count && files.allSatisfy { $0["available"] == .boolean(true) },
                        "\(files)")

                let r = try await d.lectern("undo")
                #expect(r.status == 0, "lectern undo: \(r)")
                #expect(try await d.waitForURL(endingWith: "/longbook/1.ogg")?.hasSuffix("/1.ogg") == true)
                #expect(near(try await d.position(), saved, within: 1_500_000))

                try await d.call("Pause")
                #expect(try await d.waitForStatus("Paused") == "Paused")
                let place = try await d.position()
                let mark = d.signals.mark
                try await d.openURI(d.media.longBook.appendingPathComponent("1.ogg"))
                let seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }?.seekedPosition
                #expect(near(seeked, place, within: 300_000), "opened the file it is in: at \(seeked ?? -1) µs, not \(place)")
            }
        }

        /// A file opened alone whose folder holds more of its album joins that album's book, one file at a time; the
        /// files not opened are not taken in, and nothing is marked missing.
        @Test func filesOpenedOneByOneMakeOneBookOfTheirAlbum() async throws {
            try await DaemonFixture.with { d in
                try await d.openURI(d.media.mp3Book.appendingPathComponent("02.mp3"))
                #expect(try await d.waitForStatus("Playing") == "Playing")
                var books = try await d.allBooks()
                #expect(books.map { $0["title"]?.string } == ["The CLI Book"])
                let book = try #require(books.first?["id"]?.int64)
                #expect(try await d.files(of: book).count == 1)

                try await d.openURI(d.media.mp3Book.appendingPathComponent("01.mp3"))
                #expect((try? await d.waitForURL(endingWith: "/mp3book/01.mp3"))??.hasSuffix("/01.mp3") == true, "\(d.log)")
                books = try await d.allBooks()
                #expect(books.count == 1)
                let files = try await d.files(of: book)
                #expect(files.compactMap { $0["path"]?.string.map { URL(fileURLWithPath: $0).lastPathComponent } }.sorted() == ["01.mp3", "02.mp3"])
                #expect(files.allSatisfy { $0["available"] == .boolean(true) }, "\(files)")
                #expect(try await d.currentBook() == book)
            }
        }

        /// A book's folder moved, then opened where it is now: the same book, with its place and bookmarks.
        @Test func aMovedBookOpenedAtItsNewPlaceIsTheSameBook() async throws {
            try await DaemonFixture.with { d in
                let before = d.directory.appending("Before/mp3book")
                let after = d.directory.appending("After/The CLI Book")
                try FileManager.default.createDirectory(at: before.deletingLastPathComponent(), withIntermediateDirectories: true)
                try FileManager.default.createDirectory(at: after.deletingLastPathComponent(), withIntermediateDirectories: true)
                try FileManager.default.copyItem(at: d.media.mp3Book, to: before)
                try await d.openURI(before)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                let book = try #require(try await d.allBooks().first?["id"]?.int64)
                try await d.call("Next")
                try await d.waitForURL(endingWith: "/02.mp3")
                try await d.setPosition(4_000_000)
                try await d.call("Pause")
                #expect(try await d.waitForStatus("Paused") == "Paused")
                #expect(try await d.lectern("bookmark", "add", "Kept").status == 0)
                let second = try await d.fileID(of: book, endingWith: "/02.mp3")
                let saved = try await d.waitForSavedPosition(of: book, file: second, near: 4_000_000)

                try FileManager.default.moveItem(at: before, to: after)
                let mark = d.signals.mark
                try await d.openURI(after)
                #expect(try await d.waitForURL(endingWith: "/The%20CLI%20Book/02.mp3")?.hasSuffix("/02.mp3") == true)
                let seeked = await d.signals.waitFor(since: mark) { $0.seekedPosition != nil }?.seekedPosition
                #expect(near(seeked, saved, within: 300_000), "resumed at \(seeked ?? -1) µs, saved \(saved)")
                #expect(try await d.allBooks().map { $0["id"]?.int64 } == [book])
                #expect(try await d.bookmarks(of: book).map { $0["title"]?.string } == ["Kept"])
                #expect(try await d.files(of: book).allSatisfy { $0["path"]?.string?.hasPrefix(after.path + "/") == true })
            }
        }

        /// `lectern history --json`, once it lists a session.
        private static func waitForHistory(_ d: DaemonFixture) async throws -> [[String: Any]] {
            let deadline = ContinuousClock.now + .seconds(5)
            while true {
                let r = try await d.lectern("history", "--json")
                let sessions = (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8))) as? [[String: Any]] ?? []
                if !sessions.isEmpty || ContinuousClock.now >= deadline { return sessions }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
    }
}
