import Foundation
import LecternLibrary
import Logging
import Testing
import TestSupport
import Threads
@testable import LecternBooks
@testable import LecternMedia

/// An import reads and writes a big folder in batches, so that it holds a batch's files at a time, not the
/// folder's: the books it makes are those of an import in one batch.
@Suite struct ImporterTests {
    /// A library with its importer, reading in this process.
    private struct Rig {
        let library: Library
        let importer: Importer

        init(_ directory: TemporaryDirectory, name: String, batchSize: Int) throws {
            library = try Library(path: directory.path + "/\(name).sqlite")
            let logger = Logger(label: "test")
            let opener = MediaOpener(coverDirectory: directory.appending("covers-\(name)"),
                                     readers: [MediaReader(program: nil, logger: logger)], logger: logger)
            var importer = Importer(library: library, writer: LibraryWriter(library: library, executor: ThreadExecutor(name: "lectern-test-db")),
                                    opener: opener, logger: logger)
            importer.batchSize = batchSize
            self.importer = importer
        }

        /// Every book: its title and folder, and its files present, in book order.
        func books() throws -> [String] {
            try library.books(in: nil, recursive: true).map { book in
                let files = try library.files(of: book.id!).filter(\.available).map { $0.path.split(separator: "/").suffix(2).joined(separator: "/") }
                return "\(book.title) @ \(URL(fileURLWithPath: book.sourcePath ?? "?").lastPathComponent): \(files.joined(separator: ", "))"
            }.sorted()
        }
    }

    @Test func anImportInBatchesMakesTheBooksOfOneBatch() async throws {
        let directory = try TemporaryDirectory(prefix: "lectern-importer")
        let root = directory.appending("library")
        // An album over two disc folders (a batch each); untagged files of a folder with a folder inside it (the walk
        // gives "Plain" with a, b and z, then "Plain/sub" with c); a folder of its own. Each file its own sound: the
        // same bytes in two folders would be one file and its copy. Made off the cooperative pool (ffmpeg).
        let files: [(path: String, album: String?, track: Int?)] =
            (1...2).flatMap { disc in (1...3).map { ("Big/CD\(disc)/\($0).mp3", "Big Book", disc * 10 + $0) } }
            + ["a", "b", "sub/c", "z"].map { ("Plain/\($0).mp3", nil, nil) } + ["x", "y"].map { ("Solo/\($0).mp3", nil, nil) }
        try await offThePool {
            for (index, file) in files.enumerated() {
                let url = root.appendingPathComponent(file.path)
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try AudioFiles.mp3(url, seconds: 0.3, frequency: 250 + 50 * index, tags: .init(album: file.album, track: file.track))
            }
        }

        let whole = try Rig(directory, name: "whole", batchSize: 1_000)
        let batched = try Rig(directory, name: "batched", batchSize: 2)
        #expect(Importer.batches(try FolderWalk.audioFolders(in: root.path).folders, size: 2).count > 3)
        var skipped = SkippedFiles()
        let wholeIDs = try await whole.importer.run(root, shelfPath: nil, skipped: &skipped) { _ in }
        let batchedIDs = try await batched.importer.run(root, shelfPath: nil, skipped: &skipped) { _ in }

        #expect(try batched.books() == whole.books())
        #expect(try whole.books() == [
            "Big Book @ Big: CD1/1.mp3, CD1/2.mp3, CD1/3.mp3, CD2/1.mp3, CD2/2.mp3, CD2/3.mp3",
            "Plain @ Plain: Plain/a.mp3, Plain/b.mp3, Plain/z.mp3",
            "Solo @ Solo: Solo/x.mp3, Solo/y.mp3",
            "sub @ sub: sub/c.mp3",
        ])
        #expect(batchedIDs.count == wholeIDs.count)
        // Nothing was marked missing on the way: every file's row is present.
        for book in try batched.library.books(in: nil, recursive: true) {
            #expect(try batched.library.files(of: book.id!).allSatisfy(\.available))
        }
    }

    @Test func batchesAreWholeFoldersOfAtLeastTheirSize() {
        let folders = [("/l/A", 3), ("/l/B", 1), ("/l/C", 2), ("/l/D", 1)].map { FolderWalk.AudioFolder(path: $0, files: $1) }
        #expect(Importer.batches(folders, size: 2).map { $0.map(\.path) } == [["/l/A"], ["/l/B", "/l/C"], ["/l/D"]])
        #expect(Importer.batches(folders, size: 100).map(Array.init) == [folders])
        #expect(Importer.batches([], size: 2).isEmpty)
    }

    /// A walk for an import counts each folder's audio files without keeping their paths; a batch lists them.
    @Test func aWalkCountsFoldersAndAFolderListsItsOwnFiles() throws {
        let root = try TemporaryDirectory(prefix: "lectern-importer")
        defer { root.remove() }
        for path in ["Plain/b.mp3", "Plain/a.mp3", "Plain/sub/c.mp3", "Plain/z.mp3", "Plain/cover.jpg", "Solo/x.mp3"] {
            let url = URL(fileURLWithPath: root.path + "/" + path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data([1]).write(to: url)
        }
        let walked = try FolderWalk.audioFolders(in: root.path)
        #expect(walked.folders == [("Plain", 3), ("Plain/sub", 1), ("Solo", 1)].map {
            FolderWalk.AudioFolder(path: root.path + "/" + $0, files: $1)
        })
        #expect(walked.skipped[.notAudio]?.count == 1)
        #expect(FolderWalk.audioFiles(directlyIn: root.path + "/Plain") == ["a", "b", "z"].map { root.path + "/Plain/\($0).mp3" })
        #expect(FolderWalk.audioFiles(directlyIn: root.path + "/Gone").isEmpty)
        // Whether an image of a cover's name is beside the files, in any case: where the import looks for a cover.
        let covers = MediaOpener.lowercasedCoverNames
        #expect(FolderWalk.audioFiles(directlyIn: root.path + "/Plain", noting: covers).noted)
        #expect(FolderWalk.audioFiles(directlyIn: root.path + "/Solo", noting: covers) == ([root.path + "/Solo/x.mp3"], false))
        try Data([1]).write(to: URL(fileURLWithPath: root.path + "/Solo/FOLDER.JPG"))
        #expect(FolderWalk.audioFiles(directlyIn: root.path + "/Solo", noting: covers).noted)
        #expect(FolderWalk.audioFiles(directlyIn: root.path + "/Gone", noting: covers) == ([], true), "not known: looked for")
    }

    /// A long file with a CUE sheet beside it is a book of the sheet's chapters: titles and starts as the sheet
    /// says, each ending where the next starts, the last at the file's end.
    @Test func aCueSheetBesideALongFileGivesTheBookItsChapters() async throws {
        let directory = try TemporaryDirectory(prefix: "lectern-importer")
        let root = directory.appending("library")
        let audio = root.appendingPathComponent("The Book/the book.flac")
        try FileManager.default.createDirectory(at: audio.deletingLastPathComponent(), withIntermediateDirectories: true)
        try await offThePool { try AudioFiles.flac(audio, seconds: 3) }
        try """
            TITLE "The Book"
            FILE "The Book.wav" WAVE
              TRACK 01 AUDIO
                TITLE "Prologue"
                INDEX 01 00:00:00
              TRACK 02 AUDIO
                TITLE "Chapter 1"
                INDEX 01 00:01:30
            """.write(to: root.appendingPathComponent("The Book/rip.cue"), atomically: true, encoding: .utf8)
        let rig = try Rig(directory, name: "cue", batchSize: 10)
        var skipped = SkippedFiles()
        let ids = try await rig.importer.run(root, shelfPath: nil, skipped: &skipped) { _ in }
        let book = try #require(ids.first)
        let file = try #require(try rig.library.files(of: book).first)
        let chapters = try rig.library.chapters(of: book)[file.id!] ?? []
        #expect(chapters.map(\.title) == ["Prologue", "Chapter 1"])
        #expect(chapters.map(\.start) == [0, 1_400_000])  // 1 s and 30 frames
        #expect(chapters.map(\.end) == [1_400_000, file.duration])
    }

    /// One-file books (an m4b library's shape) are written many to a transaction: each is a book of its own, found by
    /// its title, author and file as one written alone is; an album in two folders of different batches is one book.
    @Test func oneFileBooksAreWrittenManyToATransactionAndFound() async throws {
        let directory = try TemporaryDirectory(prefix: "lectern-importer")
        let root = directory.appending("library")
        let count = 24
        try await offThePool {
            for n in 0..<count {
                let url = root.appendingPathComponent("Tale \(n)/tale.mp3")
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try AudioFiles.mp3(url, seconds: 0.3, frequency: 200 + 37 * n,
                                   tags: .init(title: "Telling\(n)", artist: "Teller\(n % 3)", album: "Tale \(n)"))
            }
        }
        // A cover beside the file of one book: that book's cover, no other's.
        try Data([0xFF, 0xD8, 0xFF]).write(to: root.appendingPathComponent("Tale 3/folder.jpg"))
        let rig = try Rig(directory, name: "one-file", batchSize: 10)
        var skipped = SkippedFiles()
        let ids = try await rig.importer.run(root, shelfPath: "Tales", skipped: &skipped) { _ in }
        #expect(ids.count == count)
        #expect(skipped.all.map { "\($0.kind) \($0.entry.count)" } == ["notAudio 1"], "the cover, and nothing else")
        let library = rig.library
        #expect(try library.books(in: nil, recursive: true).count == count)
        func found(_ text: String) throws -> [String] { try library.search(text, offset: 0, limit: 50).books.map(\.title).sorted() }
        for n in [0, 11, 23] {
            #expect(try found("tale \(n)") == ["Tale \(n)"], "the title")
            #expect(try found("telling\(n)") == ["Tale \(n)"], "the file's title")
        }
        #expect(try found("teller1").count == 8, "the author")
        #expect(try found("tales").count == count, "the shelf")
        // Each book once, with its one file present; none left half made.
        for book in try library.books(in: nil, recursive: true) {
            #expect(try library.files(of: book.id!).map(\.available) == [true])
            #expect(book.coverPath == (book.title == "Tale 3" ? root.path + "/Tale 3/folder.jpg" : nil), "\(book.title)")
        }
        // Again, nothing changed: the same books, none new.
        let again = try await rig.importer.run(root, shelfPath: nil, skipped: &skipped) { _ in }
        #expect(Set(again) == Set(ids))
    }

    /// A book that can't be written in the middle of a transaction of many ends the import with its folder; the books
    /// written before it are kept whole and found, none is left half made, and the import again writes the rest. In
    /// batches of two folders (the next batch read while one is written), the books of the batches before its own are
    /// written, and none of the batches after.
    @Test(arguments: [1_000, 2])
    func aBookThatCannotBeWrittenEndsTheImportAndLosesNoOther(batchSize: Int) async throws {
        let sqlite3 = try #require(Subprocess.findExecutable("sqlite3"), "the sqlite3 shell adds the trigger that refuses a book")
        let directory = try TemporaryDirectory(prefix: "lectern-importer")
        let root = directory.appending("library")
        try await offThePool {
            for n in 0..<8 {
                let url = root.appendingPathComponent("Tale \(n)/tale.mp3")
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try AudioFiles.mp3(url, seconds: 0.3, frequency: 300 + 41 * n, tags: .init(title: "Telling\(n)", album: "Tale \(n)"))
            }
        }
        let rig = try Rig(directory, name: "refused", batchSize: batchSize)
        // A rule of the schema that refuses one book, as a book the library can't take would be.
        let refuse = "CREATE TRIGGER refuseTale5 BEFORE INSERT ON bookFile WHEN NEW.title = 'Telling5' BEGIN SELECT RAISE(ABORT, 'refused'); END;"
        let added = try await Subprocess.run(sqlite3, [directory.path + "/refused.sqlite", refuse], timeout: .seconds(30))
        try #require(added.status == 0, "\(added.stderr)")

        var skipped = SkippedFiles()
        do {
            _ = try await rig.importer.run(root, shelfPath: nil, skipped: &skipped) { _ in }
            Issue.record("the import of a book the library refuses succeeded")
        } catch let error as Importer.BookNotWritten {
            #expect(error.folder == root.path + "/Tale 5")
            #expect("\(error)".contains("Tale 5"))
        }
        let written = try rig.library.books(in: nil, recursive: true)
        #expect(written.count < 8)
        #expect(!written.map(\.title).contains("Tale 5"))
        if batchSize == 2 {
            // Batches of Tales 0–1, 2–3, 4–5 (Tale 4 written or not, in the order of its batch) and 6–7.
            let titles = Set(written.map(\.title))
            #expect(titles.isSuperset(of: (0...3).map { "Tale \($0)" }), "the batches before: \(titles.sorted())")
            #expect(titles.isDisjoint(with: (5...7).map { "Tale \($0)" }), "the batch after: \(titles.sorted())")
        }
        for book in written {
            let n = book.title.split(separator: " ").last.map(String.init) ?? "?"
            #expect(try rig.library.files(of: book.id!).map(\.available) == [true], "\(book.title) whole")
            #expect(try rig.library.search("telling\(n)", offset: 0, limit: 5).books.map(\.id) == [book.id], "\(book.title) found")
        }
        #expect(try rig.library.search("telling5", offset: 0, limit: 5).books.isEmpty)

        let dropped = try await Subprocess.run(sqlite3, [directory.path + "/refused.sqlite", "DROP TRIGGER refuseTale5"], timeout: .seconds(30))
        try #require(dropped.status == 0, "\(dropped.stderr)")
        let ids = try await rig.importer.run(root, shelfPath: nil, skipped: &skipped) { _ in }
        #expect(ids.count == 8)
        #expect(try rig.library.search("telling5", offset: 0, limit: 5).books.map(\.title) == ["Tale 5"])
    }
}
