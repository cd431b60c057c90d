import Foundation
import GRDB
@testable import LecternLibrary
import Testing
import TestSupport

/// Files known by their content: a book whose files were renamed, moved or re-tagged is found again with all the
/// user did; a copy of a book is not imported twice; a file unchanged since it was read is known as it was.
@Suite("File identity")
struct FileIdentityTests {
    /// Files with contents of their own (random bytes: the library does not read audio) in a temporary folder.
    final class Disk: Sendable {
        let directory: TemporaryDirectory
        init() throws { directory = try TemporaryDirectory(prefix: "lectern-identity") }

        /// Writes `count` bytes (seeded, so each name has its own content) at `relative`; its path.
        @discardableResult
        func write(_ relative: String, seed: UInt64, count: Int = 100_000) throws -> String {
            var generator = SeededGenerator(state: seed)
            let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            let path = directory.path + "/" + relative
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }

        /// `write`'s bytes after an ID3v2.4 tag holding `tag` (its length is the tag's: a longer text, a longer file).
        @discardableResult
        func writeTagged(_ relative: String, seed: UInt64, tag: String) throws -> String {
            let path = try write(relative, seed: seed)
            let frames = Array(tag.utf8)
            let length = frames.count
            let header: [UInt8] = Array("ID3".utf8) + [4, 0, 0] + [21, 14, 7, 0].map { UInt8((length >> $0) & 0x7f) }
            try Data(header + frames + Data(contentsOf: URL(fileURLWithPath: path))).write(to: URL(fileURLWithPath: path))
            return path
        }

        func move(_ from: String, _ to: String) throws {
            let target = directory.path + "/" + to
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try FileManager.default.moveItem(atPath: directory.path + "/" + from, toPath: target)
        }

        func copy(_ from: String, _ to: String) throws {
            let target = directory.path + "/" + to
            try FileManager.default.createDirectory(atPath: (target as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: directory.path + "/" + from, toPath: target)
        }

        /// The book an import finds in `folder` (relative): its files in name order, tagged as `album`, each with
        /// its fingerprint as read now.
        func book(_ folder: String, album: String = "", title: String? = nil) throws -> ImportedBook {
            let path = directory.path + "/" + folder
            let names = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
            let files = names.map { name in
                ImportedBook.File(path: path + "/" + name, duration: 1_000_000, title: name, album: album.isEmpty ? nil : album,
                                  fingerprint: FileFingerprint.of(path + "/" + name))
            }
            return ImportedBook(sourcePath: path, albumKey: album, title: title ?? (folder as NSString).lastPathComponent,
                                author: nil, coverPath: nil, files: files)
        }
    }

    @Test("The fingerprint follows the content, not the name: slices at the start, middle and end, and the size")
    func fingerprint() throws {
        let disk = try Disk()
        let a = try disk.write("a.mp3", seed: 1)
        let small = try disk.write("small.mp3", seed: 2, count: 1000)
        let value = try #require(FileFingerprint.of(a)?.value)
        #expect(value.hasPrefix("2:100000:"))
        try disk.copy("a.mp3", "b.mp3")
        #expect(FileFingerprint.of(disk.directory.path + "/b.mp3")?.value == value)
        #expect(FileFingerprint.of(small)?.value != value)
        #expect(FileFingerprint.of(small)?.size == 1000)
        // A byte changed in each slice, and the file one byte longer: each is another file.
        for offset in [0, 50_000 - 100, 99_999] {
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: a)))
            bytes[offset] ^= 0xff
            let changed = try disk.write("changed.mp3", seed: 0)
            try Data(bytes).write(to: URL(fileURLWithPath: changed))
            #expect(FileFingerprint.of(changed)?.value != value, "byte \(offset)")
        }
        let longer = try disk.write("longer.mp3", seed: 1, count: 100_001)
        #expect(FileFingerprint.of(longer)?.value != value)
        // The stamp is stat's: the same size and time as the full fingerprint, without reading.
        let stamp = try #require(FileFingerprint.stamp(of: a))
        #expect(stamp.size == 100_000 && stamp.modified == FileFingerprint.of(a)?.modified && stamp.value == nil)
        #expect(FileFingerprint.of(disk.directory.path + "/none.mp3") == nil)
        #expect(FileFingerprint.of(disk.directory.path) == nil)
    }

    /// A book of three files in `Mort` with a position in the third, a bookmark in the second, settings and a title
    /// of the user's; its id and the file ids.
    private func bookWithUserData(_ library: Library, _ disk: Disk) throws -> (id: Int64, files: [Int64], mark: Bookmark) {
        for (index, name) in ["01.mp3", "02.mp3", "03.mp3"].enumerated() { try disk.write("Mort/" + name, seed: 10 + UInt64(index)) }
        let outcome = try library.importBook(try disk.book("Mort", album: "Mort"), into: nil)
        #expect(outcome.created)
        let files = try library.fileIds(of: outcome.id)
        try library.renameBook(outcome.id, to: "My Mort")
        #expect(try library.savePosition(of: outcome.id, file: files[2], offset: 42_000_000))
        let mark = try library.bookmark(try library.addBookmark(to: outcome.id, file: files[1], offset: 7, title: "Here", note: "keep me").id!)
        try library.setSettings(of: outcome.id, BookSettings(volume: 2, speed: 1.25, shuffle: false, loop: .chapter))
        try library.markPlayed(outcome.id, at: Date(timeIntervalSince1970: 1_700_000_000))
        return (outcome.id, files, mark)
    }

    /// The position, bookmark, settings, title and history of `bookWithUserData` are all there.
    private func expectUserData(_ library: Library, _ book: (id: Int64, files: [Int64], mark: Bookmark),
                                sourceLocation: SourceLocation = #_sourceLocation) throws {
        let found = try library.book(book.id)
        #expect(found.title == "My Mort", sourceLocation: sourceLocation)
        #expect(found.positionFileId == book.files[2] && found.positionOffset == 42_000_000, sourceLocation: sourceLocation)
        #expect(found.settings == BookSettings(volume: 2, speed: 1.25, shuffle: false, loop: .chapter), sourceLocation: sourceLocation)
        #expect(found.lastPlayedAt == Date(timeIntervalSince1970: 1_700_000_000), sourceLocation: sourceLocation)
        #expect(try library.bookmarks(of: book.id) == [book.mark], sourceLocation: sourceLocation)
        #expect(try library.bookCount() == 1, sourceLocation: sourceLocation)
    }

    @Test("Files renamed and their folder moved: the same book, its files at their new paths, nothing of the user's lost")
    func renamedAndMoved() throws {
        let t = try TestLibrary()
        let disk = try Disk()
        let book = try bookWithUserData(t.library, disk)
        for (old, new) in [("01.mp3", "Part 1.mp3"), ("02.mp3", "Part 2.mp3"), ("03.mp3", "Part 3.mp3")] {
            try disk.move("Mort/" + old, "Shelf/Discworld/Death/" + new)
        }
        let again = try t.library.importBook(try disk.book("Shelf/Discworld/Death", album: "Mort"), into: nil)
        #expect(again == ImportedBook.Outcome(id: book.id, created: false, duplicates: []))
        try expectUserData(t.library, book)
        let files = try t.library.files(of: book.id)
        #expect(files.map(\.id!) == book.files)
        #expect(files.map { ($0.path as NSString).lastPathComponent } == ["Part 1.mp3", "Part 2.mp3", "Part 3.mp3"])
        #expect(files.allSatisfy { $0.available && $0.path.hasPrefix(disk.directory.path + "/Shelf/Discworld/Death/") })
        #expect(try t.library.book(book.id).sourcePath == disk.directory.path + "/Shelf/Discworld/Death")
        #expect(try t.library.integrityCheck() == "ok")
    }

    @Test("A folder moved is the same book, not a modified one: its modification time stays")
    func movedIsNotModified() async throws {
        let t = try TestLibrary()
        let disk = try Disk()
        for (index, name) in ["01.mp3", "02.mp3"].enumerated() { try disk.write("Mort/" + name, seed: 20 + UInt64(index)) }
        let id = try t.library.importBook(try disk.book("Mort", album: "Mort"), into: nil).id
        let modified = try t.library.book(id).modifiedAt
        try disk.move("Mort", "Shelf/Mort")
        try await Task.sleep(for: .milliseconds(10))  // a later clock reading than the import
        #expect(try t.library.importBook(try disk.book("Shelf/Mort", album: "Mort"), into: nil).id == id)
        #expect(try t.library.files(of: id).allSatisfy { $0.path.hasPrefix(disk.directory.path + "/Shelf/Mort/") })
        #expect(try t.library.book(id).modifiedAt == modified)
    }

    @Test("The fingerprint is the audio's: MP3 (ID3v2, ID3v1), FLAC and MP4 files re-tagged by a tagger keep it")
    func fingerprintLeavesTagsOut() async throws {
        let disk = try Disk()
        let folder = disk.directory.url
        func fingerprint(_ name: String) -> String? { FileFingerprint.of(folder.appendingPathComponent(name).path)?.value }
        func size(_ name: String) -> Int64? { FileFingerprint.stamp(of: folder.appendingPathComponent(name).path)?.size }
        /// `name` copied to `copy` and re-tagged there: the audio's fingerprint, and whether the size changed.
        func retagged(_ name: String, as copy: String, id3v1: Bool = false) async throws -> String? {
            try disk.copy(name, copy)
            try await offThePool {
                try AudioFiles.retag(folder.appendingPathComponent(copy), title: "A title longer than the one before", id3v1: id3v1)
            }
            #expect(size(copy) != size(name), "\(copy) re-tagged")
            return fingerprint(copy)
        }
        try await offThePool {
            try AudioFiles.mp3(folder.appendingPathComponent("a.mp3"), seconds: 2, tags: .init(title: "A", album: "Mort"))
            try AudioFiles.mp3(folder.appendingPathComponent("other.mp3"), seconds: 2, frequency: 500, tags: .init(title: "A", album: "Mort"))
            try AudioFiles.flac(folder.appendingPathComponent("a.flac"), seconds: 2)
            try AudioFiles.m4b(folder.appendingPathComponent("a.m4b"), seconds: 2, tags: .init(title: "A"))
            // A file remuxed with its moov first (as for streaming): the same samples.
            try AudioFiles.ffmpeg(["-i", folder.appendingPathComponent("a.m4b").path, "-c", "copy", "-movflags", "+faststart",
                                   folder.appendingPathComponent("c.m4b").path])
        }
        let mp3 = try #require(fingerprint("a.mp3"))
        #expect(try await retagged("a.mp3", as: "b.mp3") == mp3)
        #expect(try await retagged("a.mp3", as: "c.mp3", id3v1: true) == mp3)
        #expect(fingerprint("other.mp3") != mp3, "another sound")
        #expect(try await retagged("a.flac", as: "b.flac") == fingerprint("a.flac"))
        #expect(try await retagged("a.m4b", as: "b.m4b") == fingerprint("a.m4b"))
        #expect(fingerprint("c.m4b") == fingerprint("a.m4b"))
        #expect(Set([mp3, fingerprint("a.flac"), fingerprint("a.m4b")]).count == 3)
    }

    /// Ogg comments grow into pages of their own, which renumbers (and re-checksums) every page after them; a WAV
    /// file's chunks and RIFF size change. Re-tagged with a title long enough for that, the audio is the same.
    @Test("The fingerprint is the audio's: Ogg Vorbis, Opus and WAV files re-tagged by a tagger keep it", arguments: ["ogg", "opus", "wav"])
    func fingerprintLeavesContainerTagsOut(_ format: String) async throws {
        let disk = try Disk()
        let folder = disk.directory.url
        let (name, copy, other) = ("a.\(format)", "b.\(format)", "other.\(format)")
        @Sendable func url(_ name: String) -> URL { folder.appendingPathComponent(name) }
        func fingerprint(_ name: String) -> String? { FileFingerprint.of(url(name).path)?.value }
        try await offThePool {
            for (file, frequency) in [(name, 440), (other, 500)] {
                switch format {
                case "ogg": try AudioFiles.ogg(url(file), seconds: 12, frequency: frequency)
                case "wav": try AudioFiles.wav(url(file), seconds: 1, frequency: frequency)
                default: try AudioFiles.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=\(frequency):duration=12", "-c:a", "libopus", url(file).path])
                }
            }
            try disk.copy(name, copy)
            try AudioFiles.retag(url(copy), title: String(repeating: "A long title. ", count: 8_000))
        }
        let original = try #require(fingerprint(name))
        #expect(original.hasPrefix("3:"))
        let sizes = try [name, copy].map { try #require(FileFingerprint.stamp(of: url($0).path)?.size) }
        #expect(sizes[1] > sizes[0] + 100_000, "re-tagged with a comment of pages of its own")
        #expect(fingerprint(copy) == original)
        #expect(fingerprint(other) != original, "another sound")
        #expect(FileFingerprint.isCurrent(original, path: url(name).path))
        #expect(!FileFingerprint.isCurrent("2" + original.dropFirst(), path: url(name).path), "whole-file values are made again")
    }

    @Test("Re-tagged and moved at once: the same book, the same rows, nothing of the user's lost")
    func retaggedAndMoved() throws {
        let t = try TestLibrary()
        let disk = try Disk()
        for (index, name) in ["01.mp3", "02.mp3", "03.mp3"].enumerated() {
            try disk.writeTagged("Mort/" + name, seed: 10 + UInt64(index), tag: "Mort, part \(index + 1)")
        }
        let outcome = try t.library.importBook(try disk.book("Mort", album: "Mort"), into: nil)
        let files = try t.library.fileIds(of: outcome.id)
        #expect(try t.library.savePosition(of: outcome.id, file: files[2], offset: 42_000_000))
        let mark = try t.library.addBookmark(to: outcome.id, file: files[1], offset: 7, title: "Here", note: "")
        // As a tagger does it: new tags (longer, so every byte of the audio shifts) written to new names elsewhere.
        for (index, name) in ["01.mp3", "02.mp3", "03.mp3"].enumerated() {
            try disk.writeTagged("Discworld/Death/Part \(index + 1).mp3", seed: 10 + UInt64(index),
                                 tag: "Discworld 4: Mort, part \(index + 1) of 3, read by Nigel Planer")
            try FileManager.default.removeItem(atPath: disk.directory.path + "/Mort/" + name)
        }
        let again = try t.library.importBook(try disk.book("Discworld/Death", album: "Mort"), into: nil)
        #expect(again == ImportedBook.Outcome(id: outcome.id, created: false, duplicates: []))
        let now = try t.library.files(of: outcome.id)
        #expect(now.map(\.id!) == files)
        #expect(now.allSatisfy { $0.available && $0.path.hasPrefix(disk.directory.path + "/Discworld/Death/Part ") })
        let book = try t.library.book(outcome.id)
        #expect(book.positionFileId == files[2] && book.positionOffset == 42_000_000)
        #expect(try t.library.bookmarks(of: outcome.id) == [try t.library.bookmark(mark.id!)])
        #expect(try t.library.bookCount() == 1)
    }

    @Test("Names swapped between two files: each file keeps its own row, so the bookmark stays with its content")
    func swappedNames() throws {
        let t = try TestLibrary()
        let disk = try Disk()
        let book = try bookWithUserData(t.library, disk)
        try disk.move("Mort/02.mp3", "Mort/swap")
        try disk.move("Mort/03.mp3", "Mort/02.mp3")
        try disk.move("Mort/swap", "Mort/03.mp3")
        #expect(try t.library.importBook(try disk.book("Mort", album: "Mort"), into: nil).id == book.id)
        try expectUserData(t.library, book)
        let paths = try t.library.files(of: book.id).map { ($0.path as NSString).lastPathComponent }
        #expect(paths == ["01.mp3", "03.mp3", "02.mp3"])  // rows 2 and 3: their contents now named 03 and 02
    }

    @Test("Re-tagged with another album, in the same place: the same book under its new album")
    func retagged() throws {
        let t = try TestLibrary()
        let disk = try Disk()
        let book = try bookWithUserData(t.library, disk)
        // New tags: a new album, the bytes changed at the start (where ID3 tags are).
        for (index, name) in ["01.mp3", "02.mp3", "03.mp3"].enumerated() { try disk.write("Mort/" + name, seed: 20 + UInt64(index)) }
        let again = try t.library.importBook(try disk.book("Mort", album: "Mort (Unabridged)"), into: nil)
        #expect(again == ImportedBook.Outcome(id: book.id, created: false, duplicates: []))
        try expectUserData(t.library, book)
        #expect(try t.library.book(book.id).albumKey == "Mort (Unabridged)")
        #expect(try t.library.files(of: book.id).map(\.album) == Array(repeating: "Mort (Unabridged)", count: 3))
    }

    @Test("Another book in the same folder with one file of it is another book, and keeps that file listed")
    func oneFileIsNotTheBook() throws {
        let t = try TestLibrary()
        let disk = try Disk()
        let book = try bookWithUserData(t.library, disk)
        var other = try disk.book("Mort", album: "Eric")
        other.files = [other.files[0]]
        let outcome = try t.library.importBook(other, into: nil)
        #expect(outcome.created && outcome.id != book.id)
        #expect(try t.library.files(of: book.id).map(\.id!) == book.files)
    }

    @Test("A copy of a book in another folder is recognised: not imported twice, and not a file more")
    func copies() throws {
        let t = try TestLibrary()
        let disk = try Disk()
        let book = try bookWithUserData(t.library, disk)
        for name in ["01.mp3", "02.mp3", "03.mp3"] { try disk.copy("Mort/" + name, "Backup/Mort/" + name) }
        let copy = try t.library.importBook(try disk.book("Backup/Mort", album: "Mort"), into: nil)
        #expect(copy.id == book.id && !copy.created)
        #expect(copy.duplicates.map { ($0 as NSString).lastPathComponent } == ["01.mp3", "02.mp3", "03.mp3"])
        try expectUserData(t.library, book)
        #expect(try t.library.files(of: book.id).map(\.path).allSatisfy { $0.hasPrefix(disk.directory.path + "/Mort/") })

        // Both folders in one import (one album: one group): the copies are left out, the book is as it was.
        var both = try disk.book("Backup/Mort", album: "Mort")
        both.files += try disk.book("Mort", album: "Mort").files
        both.sourcePath = disk.directory.path
        let once = try t.library.importBook(both, into: nil)
        #expect(once.id == book.id && once.duplicates.count == 3)
        #expect(try t.library.files(of: book.id).map(\.id!) == book.files)
        #expect(try t.library.files(of: book.id).allSatisfy(\.available))

        // Once the original is gone, the copy is where the book is.
        try FileManager.default.removeItem(atPath: disk.directory.path + "/Mort")
        let moved = try t.library.importBook(try disk.book("Backup/Mort", album: "Mort"), into: nil)
        #expect(moved == ImportedBook.Outcome(id: book.id, created: false, duplicates: []))
        #expect(try t.library.files(of: book.id).map(\.path).allSatisfy { $0.hasPrefix(disk.directory.path + "/Backup/Mort/") })
        try expectUserData(t.library, book)
    }

    @Test("Identical files in one folder are each a file of the book, on every import")
    func identicalFilesInOneFolder() throws {
        let t = try TestLibrary()
        let disk = try Disk()
        try disk.write("Loop/1.mp3", seed: 5)
        for n in 2...4 { try disk.copy("Loop/1.mp3", "Loop/\(n).mp3") }
        let first = try t.library.importBook(try disk.book("Loop"), into: nil)
        #expect(first.duplicates.isEmpty)
        let ids = try t.library.fileIds(of: first.id)
        #expect(ids.count == 4)
        #expect(try t.library.importBook(try disk.book("Loop"), into: nil) == ImportedBook.Outcome(id: first.id, created: false, duplicates: []))
        #expect(try t.library.fileIds(of: first.id) == ids)
        // Moved together, renamed: still four files, the same rows.
        for n in 1...4 { try disk.move("Loop/\(n).mp3", "Moved/Loop \(n).mp3") }
        #expect(try t.library.importBook(try disk.book("Moved"), into: nil).id == first.id)
        #expect(try t.library.fileIds(of: first.id) == ids)
        #expect(try t.library.files(of: first.id).allSatisfy { $0.available && $0.path.contains("/Moved/Loop ") })
    }

    @Test("A file unchanged since it was read is known with its tags and chapters; a changed one is not")
    func unchangedFiles() throws {
        let t = try TestLibrary()
        let disk = try Disk()
        let a = try disk.write("Book/a.mp3", seed: 1)
        let b = try disk.write("Book/b.mp3", seed: 2)
        var imported = try disk.book("Book", album: "Album")
        imported.files[0].chapters = [.init(title: "One", start: 0, end: 500_000), .init(title: "Two", start: 500_000, end: nil)]
        imported.files[0].trackNumber = 7
        try t.library.add(imported)
        let stamps = [a, b, disk.directory.path + "/Book/new.mp3"].compactMap { path in
            FileFingerprint.stamp(of: path).map { (path: path, stamp: $0) }
        }
        let known = try t.library.unchangedFiles(stamps)
        #expect(known[a] == imported.files[0])
        #expect(known[b] == imported.files[1])
        // b rewritten, a second later: read again.
        try disk.write("Book/b.mp3", seed: 3)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(1)], ofItemAtPath: b)
        let changed = try t.library.unchangedFiles([b].compactMap { path in FileFingerprint.stamp(of: path).map { (path: path, stamp: $0) } })
        #expect(changed.isEmpty)
        // Rows without a fingerprint (from before v8) are never unchanged.
        let old = ImportedBook(sourcePath: "/old", albumKey: "", title: "Old", author: nil, coverPath: nil, files: [track(a)])
        let oldLibrary = try Library()
        try oldLibrary.add(old)
        #expect(try oldLibrary.unchangedFiles(stamps).isEmpty)
    }

    @Test("v8 adds the fingerprints to a library made before it; its books are found by path, then get theirs")
    func migration() throws {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        let disk = try Disk()
        try disk.write("Old/1.mp3", seed: 1)
        try disk.write("Old/2.mp3", seed: 2)
        let queue = try DatabaseQueue(path: path)
        try Schema.migrator.migrate(queue, upTo: "v6: a book's loop in Lectern's words")
        let (book, files) = try queue.write { db -> (Int64, [Int64]) in
            try db.execute(sql: """
                INSERT INTO book(title, addedAt, modifiedAt, userOrder, sourcePath, albumKey)
                VALUES ('Old', '2024-01-02 03:04:05.000', '2024-01-02 03:04:05.000', 1, ?, '')
                """, arguments: [disk.directory.path + "/Old"])
            let book = db.lastInsertedRowID
            var files: [Int64] = []
            for n in 1...2 {
                try db.execute(sql: "INSERT INTO bookFile(bookId, path, position) VALUES (?, ?, ?)",
                               arguments: [book, disk.directory.path + "/Old/\(n).mp3", n - 1])
                files.append(db.lastInsertedRowID)
            }
            try db.execute(sql: "UPDATE book SET positionFileId = ?, positionOffset = 5 WHERE id = ?", arguments: [files[1], book])
            return (book, files)
        }
        try queue.close()

        let library = try Library(path: path)
        #expect(try library.files(of: book).map(\.fingerprint) == [nil, nil])
        // The next import finds the files by path and stores their fingerprints...
        #expect(try library.importBook(try disk.book("Old"), into: nil) == ImportedBook.Outcome(id: book, created: false, duplicates: []))
        #expect(try library.files(of: book).map(\.fingerprint) == [FileFingerprint.of(disk.directory.path + "/Old/1.mp3")?.value,
                                                                   FileFingerprint.of(disk.directory.path + "/Old/2.mp3")?.value])
        // ...by which they are found once moved.
        try disk.move("Old/1.mp3", "New/one.mp3")
        try disk.move("Old/2.mp3", "New/two.mp3")
        #expect(try library.importBook(try disk.book("New"), into: nil).id == book)
        #expect(try library.fileIds(of: book) == files)
        #expect(try library.book(book).positionFileId == files[1])
        #expect(try library.integrityCheck() == "ok")
    }
}
