import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Library {
    /// org.lectern.Bookmarks1.
    @Suite struct BookmarkAPI {
        @Test func bookmarksOfTheCurrentBookAreWhereThePlayerIs() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.longBook)[0]
                let first = try await d.fileID(of: book, endingWith: "/1.ogg")
                let second = try await d.fileID(of: book, endingWith: "/2.ogg")
                try await d.lib("ActivateBook", [.int64(book), .boolean(true)])
                #expect(try await d.waitForStatus("Playing") == "Playing")
                try await d.setPosition(7_000_000)
                try await d.waitForPosition(atLeast: 7_100_000)
                try await d.call("Pause")
                #expect(try await d.waitForStatus("Paused") == "Paused")
                let position = try await d.position()

                var mark = d.signals.mark
                let atSeven = try await d.marks("AddBookmark", [.int64(book), .string(""), .string("")]).first?.int64 ?? 0
                try await d.signals.barrier()
                #expect(atSeven > 0)
                #expect(d.librarySignals(since: mark).map(\.member) == ["BookmarksChanged"])
                #expect(d.librarySignals(since: mark).first?.arguments == [.int64(book)])
                var list = try await d.bookmarks(of: book)
                #expect(list.count == 1)
                let added = list.first ?? [:]
                #expect(Set(added.keys) == ["id", "book", "file", "offset", "title", "note", "created", "kind"])
                #expect(added["id"] == .int64(atSeven) && added["book"] == .int64(book) && added["file"] == .int64(first))
                #expect(near(added["offset"]?.int64, position, within: 100_000), "offset \(added["offset"].map { "\($0)" } ?? "nil") vs Position \(position)")
                let seconds = (added["offset"]?.int64 ?? 0) / 1_000_000
                #expect(added["title"] == .string(String(format: "Bookmark at 0:%02d", seconds)))
                #expect(added["note"] == .string("") && added["kind"] == .string("user"))
                let created = added["created"]?.int64 ?? 0
                #expect(abs(created - Int64(Date().timeIntervalSince1970 * 1_000_000)) < 60_000_000)

                // One in the second file, then one earlier in the first: listed in book order.
                try await d.call("Next")
                try await d.waitForURL(endingWith: "/longbook/2.ogg")
                try await d.setPosition(3_000_000)
                let inSecond = try await d.marks("AddBookmark", [.int64(book), .string("Second"), .string("a note")]).first?.int64 ?? 0
                try await d.call("Previous")
                try await d.waitForURL(endingWith: "/longbook/1.ogg")
                try await d.setPosition(2_000_000)
                let atTwo = try await d.marks("AddBookmark", [.int64(book), .string("Early"), .string("")]).first?.int64 ?? 0
                list = try await d.bookmarks(of: book)
                #expect(list.compactMap { $0["id"]?.int64 } == [atTwo, atSeven, inSecond])
                #expect(list.compactMap { $0["file"]?.int64 } == [first, first, second])
                #expect(list.last?["note"] == .string("a note"))
                #expect(near(list.last?["offset"]?.int64, 3_000_000, within: 500_000))

                // Rename, note, delete: each a BookmarksChanged(book). The adds' signals are recorded first (the
                // recorder is a task of its own: a reply can overtake it).
                try await d.signals.barrier()
                mark = d.signals.mark
                try await d.marks("RenameBookmark", [.int64(inSecond), .string("  Renamed  ")])
                try await d.marks("SetBookmarkNote", [.int64(inSecond), .string("new note\nwith two lines")])
                try await d.marks("DeleteBookmark", [.int64(atTwo)])
                try await d.signals.barrier()
                let sent = d.librarySignals(since: mark)
                #expect(sent.map(\.member) == ["BookmarksChanged", "BookmarksChanged", "BookmarksChanged"])
                #expect(sent.allSatisfy { $0.arguments == [.int64(book)] })
                list = try await d.bookmarks(of: book)
                #expect(list.compactMap { $0["id"]?.int64 } == [atSeven, inSecond])
                #expect(list.last?["title"] == .string("Renamed"))
                #expect(list.last?["note"] == .string("new note\nwith two lines"))
            }
        }

        @Test func bookmarkErrorsChangeNothing() async throws {
            try await DaemonFixture.with { d in
                let book = try await d.importOK(d.media.book)[0]
                let bookmark = try await d.marks("AddBookmark", [.int64(book), .string("Kept"), .string("")]).first?.int64 ?? 0
                let snapshot = try await d.librarySnapshot()
                let mark = d.signals.mark
                let unknown: Int64 = 987_654
                let b = Lib.bookmarks

                await d.expectError(Lib.notFound, "AddBookmark", [.int64(unknown), .string("x"), .string("")], interface: b)
                await d.expectError(Lib.notFound, "AddBookmark", [.int64(0), .string("x"), .string("")], interface: b)
                await d.expectError(Lib.invalidArgument, "AddBookmark", [.int64(book), .string(tooLongName), .string("")], interface: b)
                await d.expectError(Lib.invalidArgument, "AddBookmark",
                                    [.int64(book), .string("x"), .string(String(repeating: "n", count: 100_001))], interface: b)
                await d.expectError(Lib.notFound, "RenameBookmark", [.int64(unknown), .string("x")], interface: b)
                for title in ["", "   ", tooLongName] {
                    await d.expectError(Lib.invalidArgument, "RenameBookmark", [.int64(bookmark), .string(title)], interface: b)
                }
                await d.expectError(Lib.notFound, "SetBookmarkNote", [.int64(unknown), .string("x")], interface: b)
                await d.expectError(Lib.invalidArgument, "SetBookmarkNote",
                                    [.int64(bookmark), .string(String(repeating: "n", count: 100_001))], interface: b)
                await d.expectError(Lib.notFound, "DeleteBookmark", [.int64(unknown)], interface: b)
                await d.expectError(Lib.notFound, "ListBookmarks", [.int64(unknown)], interface: b)
                await d.expectError(Lib.notFound, "JumpToBookmark", [.int64(unknown)], interface: b)

                let invalidArgs = DBusErrors.invalidArgs
                await d.expectError(invalidArgs, "AddBookmark", [.int64(book), .string("x")], interface: b)
                await d.expectError(invalidArgs, "AddBookmark", [.string("x"), .string("x"), .string("")], interface: b)
                await d.expectError(invalidArgs, "RenameBookmark", [.int64(bookmark), .int64(1)], interface: b)
                await d.expectError(invalidArgs, "DeleteBookmark", [.int32(Int32(bookmark))], interface: b)
                await d.expectError(invalidArgs, "ListBookmarks", [], interface: b)
                await d.expectError(invalidArgs, "JumpToBookmark", [.string("1")], interface: b)

                try await d.expectNothingChanged(since: mark, snapshot: snapshot)
                #expect(try await d.currentBook() == 0)
                #expect(try await d.status() == "Stopped")
            }
        }

        @Test func aBookmarkOfAnotherBookIsAtItsSavedPlaceAndJumpingThereMakesItCurrent() async throws {
            try await DaemonFixture.with { d in
                let long = try await d.importOK(d.media.longBook)[0]
                let mp3 = try await d.importOK(d.media.mp3Book)[0]
                let second = try await d.fileID(of: long, endingWith: "/longbook/2.ogg")

                // A never-played book: its first file, at 0.
                let fresh = try await d.marks("AddBookmark", [.int64(mp3), .string(""), .string("")]).first?.int64 ?? 0
                let freshMark = try await d.bookmarks(of: mp3).first ?? [:]
                #expect(freshMark["id"] == .int64(fresh))
                #expect(freshMark["file"] == .int64(try await d.fileID(of: mp3, endingWith: "/01.mp3")))
                #expect(freshMark["offset"] == .int64(0) && freshMark["title"] == .string("Bookmark at 0:00"))

                // Leave the long book 4 s into its second file, then make another book current.
                try await d.lib("ActivateBook", [.int64(long), .boolean(false)])
                try await d.call("Next")
                try await d.waitForURL(endingWith: "/longbook/2.ogg")
                try await d.setPosition(4_000_000)
                let saved = try await d.waitForSavedPosition(of: long, file: second, near: 4_000_000)
                try await d.lib("ActivateBook", [.int64(mp3), .boolean(true)])
                #expect(try await d.waitForURL(endingWith: "/mp3book/01.mp3")?.hasSuffix("/01.mp3") == true)
                #expect(try await d.currentBook() == mp3)

                let id = try await d.marks("AddBookmark", [.int64(long), .string(""), .string("")]).first?.int64 ?? 0
                let mark = try await d.bookmarks(of: long).first ?? [:]
                #expect(mark["id"] == .int64(id))
                #expect(mark["file"] == .int64(second))
                #expect(mark["offset"] == .int64(saved))
                #expect(mark["title"] == .string("Bookmark at 0:04"))
                // Adding it did not change what plays.
                #expect(try await d.currentBook() == mp3)

                // Jumping to it makes the long book current, there.
                let before = d.signals.mark
                try await d.marks("JumpToBookmark", [.int64(id)])
                #expect(try await d.waitForURL(endingWith: "/longbook/2.ogg")?.hasSuffix("/longbook/2.ogg") == true)
                #expect(try await d.currentBook() == long)
                try await d.signals.barrier()
                #expect(d.currentBookChanges(since: before).last == long)
                let position = try await d.waitForProperty("Position") { near($0.int64, saved, within: 500_000) }.int64
                #expect(near(position, saved, within: 500_000), "Position \(position ?? -1) vs bookmark \(saved)")
                let url = try await d.currentURL()
                #expect(url == MediaLibrary.uri(d.media.longBook.appendingPathComponent("2.ogg")))

                // Within the current book: to the first file and back.
                try await d.setPosition(9_000_000)
                let early = try await d.marks("AddBookmark", [.int64(long), .string("Nine"), .string("")]).first?.int64 ?? 0
                try await d.listen("JumpToFile", [.int32(0), .int64(0)])
                try await d.waitForURL(endingWith: "/longbook/1.ogg")
                try await d.marks("JumpToBookmark", [.int64(early)])
                #expect(try await d.waitForURL(endingWith: "/longbook/2.ogg")?.hasSuffix("/longbook/2.ogg") == true)
                #expect(near(try await d.waitForProperty("Position") { near($0.int64, 9_000_000, within: 500_000) }.int64,
                             9_000_000, within: 500_000))

                // And to the other book's bookmark at 0:00.
                try await d.marks("JumpToBookmark", [.int64(fresh)])
                #expect(try await d.waitForURL(endingWith: "/mp3book/01.mp3")?.hasSuffix("/01.mp3") == true)
                #expect(try await d.currentBook() == mp3)
                #expect((try await d.position()) < 1_500_000)
            }
        }
    }
}
