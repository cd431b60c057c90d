import Foundation
import LecternLibrary
import Logging
import TestSupport
import Testing
import Threads
@testable import LecternDaemon
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
    }
}
