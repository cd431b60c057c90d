import DBus
import Foundation
import Testing
import TestSupport

extension Integration.Library {
    /// MPRIS org.mpris.MediaPlayer2.Playlists: the library's books as playlists.
    @Suite struct Playlists {
        static let noPlaylist: DBusValue = .structure([.boolean(false), .structure([.objectPath(ObjectPath("/")!), .string(""), .string("")])])

        @Test func booksArePlaylistsInEveryOrdering() async throws {
            try await DaemonFixture.with { d in
                #expect(try await d.get("ActivePlaylist", interface: MPRIS.playlists) == Self.noPlaylist)
                #expect(try await d.get("PlaylistCount", interface: MPRIS.playlists) == .uint32(0))
                let imported = try await d.importOK(try await d.libraryMedia.tree)
                #expect(try await d.get("PlaylistCount", interface: MPRIS.playlists) == .uint32(UInt32(imported.count)))
                let orderings = try await d.get("Orderings", interface: MPRIS.playlists).stringArray ?? []
                #expect(!orderings.isEmpty)
                #expect(Set(orderings).isSubset(of: ["Alphabetical", "Created", "Modified", "Played", "User"]), "\(orderings)")
                #expect(Set(orderings) == ["Alphabetical", "Created", "Modified", "Played", "User"])

                let books = try await d.allBooks()
                let titleByID = Dictionary(uniqueKeysWithValues: books.map { ($0["id"]?.int64 ?? 0, $0["title"]?.string ?? "") })
                func page(_ index: UInt32, _ count: UInt32, _ order: String, _ reverse: Bool = false) async throws -> [DBusValue] {
                    try await d.call("GetPlaylists", [.uint32(index), .uint32(count), .string(order), .boolean(reverse)],
                                     interface: MPRIS.playlists).first?.elements ?? []
                }
                func ids(_ playlists: [DBusValue]) -> [Int64] {
                    playlists.compactMap { $0.fields?.first?.objectPath?.rawValue }.map {
                        $0.hasPrefix(Lib.playlistPrefix) ? Int64($0.dropFirst(Lib.playlistPrefix.count)) ?? -1 : -1
                    }
                }
                func titles(_ playlists: [DBusValue]) -> [String] { playlists.compactMap { $0.fields?[1].string } }

                // Alphabetical, forwards and backwards; each entry (path, title, icon) matches the book.
                let alphabetical = try await page(0, 100, "Alphabetical")
                #expect(titles(alphabetical) == LibraryMedia.treeTitles)
                #expect(ids(alphabetical).map { titleByID[$0] ?? "?" } == LibraryMedia.treeTitles)
                #expect(alphabetical.allSatisfy { $0.type == .structure([.objectPath, .string, .string]) })
                #expect(titles(try await page(0, 100, "Alphabetical", true)) == LibraryMedia.treeTitles.reversed())

                // Paging: Index and MaxCount.
                var paged: [DBusValue] = []
                for start in stride(from: 0, to: 9, by: 3) { paged += try await page(UInt32(start), 3, "Alphabetical") }
                #expect(paged == alphabetical)
                #expect(titles(try await page(2, 2, "Alphabetical")) == Array(LibraryMedia.treeTitles[2..<4]))
                #expect(try await page(100, 10, "Alphabetical").isEmpty)
                #expect(try await page(0, 0, "Alphabetical").isEmpty)
                #expect(try await page(0, UInt32.max, "Alphabetical") == alphabetical)
                #expect(try await page(UInt32.max, UInt32.max, "Alphabetical").isEmpty)

                // Created and User: the order they were added in (ids grow with it).
                let byID = ids(alphabetical).sorted()
                #expect(ids(try await page(0, 100, "Created")) == byID)
                #expect(ids(try await page(0, 100, "Created", true)) == byID.reversed())
                #expect(ids(try await page(0, 100, "User")) == byID)
                #expect(ids(try await page(0, 100, "User", true)) == byID.reversed())

                // Modified: a renamed book comes last (first when reversed).
                let renamed = try await d.bookID(titled: "Beta Mix")
                try await Task.sleep(for: .milliseconds(20))
                try await d.lib("RenameBook", [.int64(renamed), .string("Beta Mix Renamed")])
                #expect(ids(try await page(0, 100, "Modified")).last == renamed)
                #expect(ids(try await page(0, 100, "Modified", true)).first == renamed)
                #expect(titles(try await page(0, 100, "Alphabetical")).contains("Beta Mix Renamed"))

                // Played: never-played books, then by the last time played; reversed: the latest first.
                let saga = try await d.bookID(titled: "Mp3 Saga"), tales = try await d.bookID(titled: "Untagged Tales")
                try await d.call("ActivatePlaylist", [.objectPath(ObjectPath(Lib.playlistPrefix + "\(saga)")!)], interface: MPRIS.playlists)
                try await Task.sleep(for: .milliseconds(20))
                try await d.call("ActivatePlaylist", [.objectPath(ObjectPath(Lib.playlistPrefix + "\(tales)")!)], interface: MPRIS.playlists)
                let played = ids(try await page(0, 100, "Played"))
                let playedReversed = ids(try await page(0, 100, "Played", true))
                #expect(Array(played.suffix(2)) == [saga, tales], "\(played)")
                #expect(Array(playedReversed.prefix(2)) == [tales, saga], "\(playedReversed)")
                #expect(Set(played) == Set(byID))

                // A bad ordering is InvalidArgs; wrong types too.
                for order in ["Bogus", "", "alphabetical"] {
                    let error = await d.errorName { _ = try await page(0, 10, order) }
                    #expect(error == DBusErrors.invalidArgs, "Order \(order): \(error ?? "succeeded")")
                }
                let wrongTypes = await d.errorName {
                    try await d.call("GetPlaylists", [.int32(0), .uint32(10), .string("Alphabetical"), .boolean(false)], interface: MPRIS.playlists)
                }
                #expect(wrongTypes == DBusErrors.invalidArgs)
            }
        }

        @Test func activatePlaylistResumesThatBook() async throws {
            try await DaemonFixture.with { d in
                let long = try await d.importOK(d.media.longBook)[0]
                let covered = try await d.importOK(d.media.coverMP3.deletingLastPathComponent())[0]
                #expect(try await d.get("ActivePlaylist", interface: MPRIS.playlists) == Self.noPlaylist)

                // Leave the long book 6 s into 3.ogg.
                try await d.lib("ActivateBook", [.int64(long), .boolean(false)])
                try await d.call("Next")
                try await d.call("Next")
                try await d.waitForURL(endingWith: "/longbook/3.ogg")
                try await d.setPosition(6_000_000)
                let third = try await d.fileID(of: long, endingWith: "/longbook/3.ogg")
                let saved = try await d.waitForSavedPosition(of: long, file: third, near: 6_000_000)
                try await d.lib("ActivateBook", [.int64(covered), .boolean(false)])

                // ActivePlaylist follows the current book; a book with a cover has it as the icon.
                let coverActive = try await d.get("ActivePlaylist", interface: MPRIS.playlists).fields
                #expect(coverActive?.first == .boolean(true))
                let coverPlaylist = coverActive?.last?.fields
                #expect(coverPlaylist?[0] == .objectPath(ObjectPath(Lib.playlistPrefix + "\(covered)")!))
                #expect(coverPlaylist?[1] == .string(MediaLibrary.tags.album ?? ""))
                let icon = coverPlaylist?[2].string ?? ""
                #expect(icon.hasPrefix("file:///"), "icon \(icon)")
                if let url = URL(string: icon) { #expect(FileManager.default.fileExists(atPath: url.path), "icon \(icon)") }

                let mark = d.signals.mark
                let path = ObjectPath(Lib.playlistPrefix + "\(long)")!
                try await d.call("ActivatePlaylist", [.objectPath(path)], interface: MPRIS.playlists)
                #expect(try await d.waitForStatus("Playing") == "Playing")
                #expect(try await d.currentURL() == MediaLibrary.uri(d.media.longBook.appendingPathComponent("3.ogg")))
                let position = try await d.position()
                #expect(position >= saved - 100_000 && position < saved + 1_500_000, "Position \(position), saved \(saved)")
                #expect(try await d.currentBook() == long)
                let expected: DBusValue = .structure([.boolean(true), .structure([.objectPath(path), .string("longbook"), .string("")])])
                #expect(try await d.get("ActivePlaylist", interface: MPRIS.playlists) == expected)
                try await d.signals.barrier()
                let changes = d.signals.since(mark).filter { $0.path == MPRIS.path && $0.changedInterface == MPRIS.playlists }
                #expect(changes.last?.changed["ActivePlaylist"] == expected, "\(changes)")

                // Errors: a path that is not a playlist, a book that does not exist; nothing changes.
                for bad in ["/", "/org/mpris/MediaPlayer2", Lib.playlistPrefix + "abc"] {
                    let error = await d.errorName {
                        try await d.call("ActivatePlaylist", [.objectPath(ObjectPath(bad)!)], interface: MPRIS.playlists)
                    }
                    #expect(error == DBusErrors.invalidArgs, "\(bad): \(error ?? "succeeded")")
                }
                let missing = await d.errorName {
                    try await d.call("ActivatePlaylist", [.objectPath(ObjectPath(Lib.playlistPrefix + "987654")!)], interface: MPRIS.playlists)
                }
                #expect(missing == Lib.notFound)
                let wrongType = await d.errorName {
                    try await d.call("ActivatePlaylist", [.string(path.rawValue)], interface: MPRIS.playlists)
                }
                #expect(wrongType == DBusErrors.invalidArgs)
                #expect(try await d.currentBook() == long)
                #expect(try await d.get("ActivePlaylist", interface: MPRIS.playlists) == expected)
                #expect(try await d.status() == "Playing")
            }
        }
    }
}
