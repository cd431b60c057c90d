import DBus
import Foundation
import Testing
import TestSupport

extension Integration {
    /// The configuration's library folders, watched by the running daemon: a book copied in appears once its files
    /// are written, announced as an import; a file re-tagged in place changes its book; a book whose folder is
    /// removed keeps its place in the library; a folder added to the configuration by a reload is watched.
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
                try AudioFiles.mp3(dune.appendingPathComponent("0\(n + 1).mp3"), seconds: 1,
                                   tags: .init(title: title, artist: "Frank Herbert", album: "Dune", track: n + 1))
            }
            try await DaemonFixture.with(daemonArguments: ["--config", config]) { d in
                // Lectern's own API answers once the library folders are watched.
                #expect(try await d.configValues()["library-folders"]?.value == "[\(library.path)]")
                var mark = try await d.signals.barrier()
                try FileManager.default.copyItem(at: dune, to: library.appendingPathComponent("Dune"))
                let finished = await d.signals.waitFor(since: mark, timeout: .seconds(30)) { $0.isLibrary("ImportFinished") }
                let imported = finished?.arguments[1].elements?.compactMap(\.int64) ?? []
                #expect(imported.count == 1, "\(String(describing: finished))\n\(d.log)")
                let book = try await d.bookID(titled: "Dune")
                #expect(imported == [book])
                #expect(try await d.files(of: book).compactMap { $0["title"]?.string } == ["Part One", "Part Two"])
                #expect(d.signals.since(mark).contains { $0.isLibrary("ImportProgress") }, "the import's progress is announced")

                // Re-tagged in place: the book follows.
                mark = try await d.signals.barrier()
                let retagged = root.appending("retagged.mp3")
                try AudioFiles.mp3(retagged, seconds: 1, tags: .init(title: "Prologue", artist: "Frank Herbert", album: "Dune", track: 1))
                try Data(contentsOf: retagged).write(to: library.appendingPathComponent("Dune/01.mp3"))
                #expect(await d.signals.waitFor(since: mark, timeout: .seconds(30)) { $0.isLibrary("ImportFinished") } != nil)
                #expect(try await d.bookID(titled: "Dune") == book, "the same book")
                #expect(try await d.files(of: book).compactMap { $0["title"]?.string } == ["Prologue", "Part Two"])

                // A folder added to the configuration and reloaded is watched too.
                try "library-folders: ['\(library.path)', '\(later.path)']\n".write(toFile: config, atomically: true, encoding: .utf8)
                #expect(try await d.lectern("config", "reload").status == 0)
                mark = try await d.signals.barrier()
                let emma = later.appendingPathComponent("Emma")
                try FileManager.default.createDirectory(at: emma, withIntermediateDirectories: true)
                try AudioFiles.mp3(emma.appendingPathComponent("1.mp3"), seconds: 1, tags: .init(title: "Volume I", album: "Emma"))
                #expect(await d.signals.waitFor(since: mark, timeout: .seconds(30)) { $0.isLibrary("ImportFinished") } != nil)
                #expect(try await d.bookID(titled: "Emma") > 0)

                // Removed from the disk: the book stays, with its files listed (its place and bookmarks go nowhere).
                try FileManager.default.removeItem(at: library.appendingPathComponent("Dune"))
                let removal = try await poll({ d.log }, until: { $0.contains("a watched folder was removed or moved away") })
                #expect(removal.contains("a watched folder was removed or moved away"), "\(d.log)")
                #expect(try await d.bookID(titled: "Dune") == book)
                #expect(try await d.files(of: book).count == 2)
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
                try AudioFiles.mp3(folder.appendingPathComponent("1.mp3"), seconds: 1,
                                   tags: .init(title: "Disc \(disc)", album: "Saga", track: 1, disc: disc))
            }
            try FileManager.default.createDirectory(at: library, withIntermediateDirectories: true)
            let config = root.appending("config.yaml").path
            try "library-folders: ['\(library.path)']\n".write(toFile: config, atomically: true, encoding: .utf8)
            try await DaemonFixture.with(daemonArguments: ["--config", config]) { d in
                #expect(try await d.configValues()["library-folders"]?.value == "[\(library.path)]")
                var mark = try await d.signals.barrier()
                try FileManager.default.copyItem(at: saga, to: library.appendingPathComponent("Saga"))
                #expect(await d.signals.waitFor(since: mark, timeout: .seconds(30)) { $0.isLibrary("ImportFinished") } != nil)
                let book = try await d.bookID(titled: "Saga")
                #expect(try await d.files(of: book).count == 2)

                // Into the second disc's folder.
                mark = try await d.signals.barrier()
                let extra = root.appending("extra.mp3")
                try AudioFiles.mp3(extra, seconds: 1, tags: .init(title: "Disc 2, part 2", album: "Saga", track: 2, disc: 2))
                try FileManager.default.copyItem(at: extra, to: library.appendingPathComponent("Saga/CD2/2.mp3"))
                #expect(await d.signals.waitFor(since: mark, timeout: .seconds(30)) { $0.isLibrary("ImportFinished") } != nil)
                #expect(try await d.allBooks().filter { $0["title"]?.string == "Saga" }.count == 1, "one book, not one a disc")
                #expect(try await d.files(of: book).compactMap { $0["title"]?.string } == ["Disc 1", "Disc 2", "Disc 2, part 2"])
            }
        }
    }
}
