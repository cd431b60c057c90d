import Foundation
import LecternLibrary
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Fills a library with enough books that its file spans many pages, and closes it.
private func fill(_ path: String, books: Int) throws -> Snapshot {
    let library = try Library(path: path)
    for index in 0..<books {
        try library.add(importedBook("/fill/\(index)", title: "Book \(index) " + String(repeating: "t", count: 200),
                                     files: (0..<40).map { file in
            track("/fill/\(index)/\(file).mp3", title: String(repeating: "f", count: 100), artist: "Artist \(index)",
                  album: "Album \(index)", chapters: [.init(title: "Chapter", start: 0, end: nil)])
        }))
    }
    return try Snapshot(library)
}

@Suite("Faults")
struct FaultTests {
    @Test("A file of random bytes is moved aside and a fresh library opens")
    func randomBytes() throws {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        var rng = SeededGenerator(state: 42)
        let bytes = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &rng) })
        try bytes.write(to: URL(fileURLWithPath: path))

        let library = try Library(path: path)
        let aside = try #require(library.movedAsideCorruptFile)
        #expect(aside.hasPrefix(path + ".corrupt-"))
        #expect(FileManager.default.contents(atPath: aside) == bytes)
        #expect(try library.integrityCheck() == "ok")
        #expect(try library.bookCount() == 0)
        #expect(try library.allShelves().isEmpty)
        let id = try library.add(importedBook("/after"))
        #expect(try library.book(id).title == "after")
        // The fresh file is fine the next time.
        let again = try Library(path: path)
        #expect(again.movedAsideCorruptFile == nil)
        #expect(try again.bookCount() == 1)
        #expect(FileManager.default.contents(atPath: aside) == bytes)
    }

    /// A closed, checkpointed library of 30 books of 40 files (about 400 KB), made once (it takes seconds: on a
    /// thread of its own, see ``Once``).
    static func filledFile() async throws -> Data {
        try await filled.value {
            let dir = try TemporaryDirectory(prefix: "lectern-library")
            let path = dir.path + "/library.sqlite"
            let full = try fill(path, books: 30)
            guard full.books.count == 30, !FileManager.default.fileExists(atPath: path + "-wal"),
                  let data = FileManager.default.contents(atPath: path) else {
                throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the filled library wasn't checkpointed"])
            }
            return data
        }
    }
    private static let filled = Once<Data>()

    /// Cut at a page boundary (a fraction of the pages) or 1,000 bytes into the next page.
    @Test("A valid library cut short is moved aside and a fresh library opens",
          arguments: [0.1, 0.25, 0.5, 0.75, 0.95], [0, 1000])
    func truncated(fraction: Double, extra: Int) async throws {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        let whole = try await Self.filledFile()
        #expect(whole.count > 200_000)
        let cut = Data(whole.prefix(Int(Double(whole.count / 4096) * fraction) * 4096 + extra))
        try cut.write(to: URL(fileURLWithPath: path))

        let library = try Library(path: path)
        let aside = try #require(library.movedAsideCorruptFile, "a file cut to \(cut.count) of \(whole.count) bytes opened as sound")
        #expect(FileManager.default.contents(atPath: aside) == cut)
        #expect(try library.integrityCheck() == "ok")
        #expect(try library.bookCount() == 0)
        #expect(try library.allShelves().isEmpty)
        try library.add(importedBook("/after"))
        #expect(try library.bookCount() == 1)
    }

    @Test("A valid library with one page overwritten in the middle is moved aside")
    func clobberedPage() async throws {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        var bytes = try await Self.filledFile()
        let pages = bytes.count / 4096
        var rng = SeededGenerator(state: 9)
        let page = pages / 2
        for index in (page * 4096)..<((page + 1) * 4096) { bytes[index] = UInt8.random(in: 0...255, using: &rng) }
        try bytes.write(to: URL(fileURLWithPath: path))

        let library = try Library(path: path)
        let aside = try #require(library.movedAsideCorruptFile, "a file with page \(page) of \(pages) overwritten opened as sound")
        #expect(aside.hasPrefix(path + ".corrupt-"))
        #expect(FileManager.default.contents(atPath: aside) == bytes, "the corrupt file was not kept as it was")
        #expect(try library.integrityCheck() == "ok")
        #expect(try library.bookCount() == 0)
        try library.add(importedBook("/after"))
        #expect(try Library(path: path).movedAsideCorruptFile == nil)
    }

    @Test("integrityCheck reports a corrupt page rather than throwing")
    func integrityReport() async throws {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        var bytes = try await Self.filledFile()
        let page = bytes.count / 4096 / 2
        for index in (page * 4096)..<((page + 1) * 4096) { bytes[index] = 0x5A }
        try bytes.write(to: URL(fileURLWithPath: path))
        // The sqlite3 shell, an independent reader, agrees that the file is not sound: it names the page, or stops
        // at it with "malformed" when the page holds a table's rows (quick_check reads them for NOT NULL and CHECK).
        if Subprocess.findExecutable("sqlite3") != nil {
            let report = try await Subprocess.run("sqlite3", ["-noheader", "-list", path, "PRAGMA quick_check"], timeout: .seconds(30))
            #expect(report.stdout.trimmingCharacters(in: .whitespacesAndNewlines) != "ok", "\(report.stderr)")
        }
        let library = try Library(path: path)
        #expect(library.movedAsideCorruptFile != nil)
    }

    @Test("Two corrupt files moved aside in the same second")
    func movedAsideNameTaken() throws {
        let dir = try TemporaryDirectory(prefix: "lectern-library")
        let path = dir.path + "/library.sqlite"
        // Occupy the names the next few seconds would give, as an earlier corrupt file of this second would.
        let formatter = ISO8601DateFormatter()
        let now = Date()
        for second in 0..<4 {
            let name = path + ".corrupt-" + formatter.string(from: now + Double(second)).replacingOccurrences(of: ":", with: "")
            try Data("an earlier corrupt file".utf8).write(to: URL(fileURLWithPath: name))
        }
        try Data(repeating: 0xAB, count: 4096).write(to: URL(fileURLWithPath: path))
        let first: String
        do {
            let library = try Library(path: path)
            first = try #require(library.movedAsideCorruptFile)
            #expect(try library.bookCount() == 0)
        }
        // Another corrupt file in the same second gets a name of its own; nothing earlier is overwritten.
        try Data(repeating: 0xCD, count: 4096).write(to: URL(fileURLWithPath: path))
        let second = try #require(try Library(path: path).movedAsideCorruptFile)
        #expect(first != second)
        #expect(FileManager.default.contents(atPath: first) == Data(repeating: 0xAB, count: 4096))
        #expect(FileManager.default.contents(atPath: second) == Data(repeating: 0xCD, count: 4096))
        let earlier = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".corrupt-") && !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") }
        #expect(earlier.count == 6, "\(earlier)")
        for name in earlier where ![first, second].contains(dir.path + "/" + name) {
            #expect(FileManager.default.contents(atPath: dir.path + "/" + name) == Data("an earlier corrupt file".utf8))
        }
    }

    /// A closed library in `<tmp>/data/library.sqlite` with a shelf, a book, a position and a bookmark.
    private struct Prepared {
        let dir: TemporaryDirectory
        let data: String
        let path: String
        let before: Snapshot
        let bookId: Int64
        let fileId: Int64

        init() throws {
            dir = try TemporaryDirectory(prefix: "lectern-library")
            data = dir.path + "/data"
            path = data + "/library.sqlite"
            let library = try Library(path: path)
            let shelf = try library.createShelf(named: "Shelf", in: nil)
            bookId = try library.add(importedBook("/ro"), into: shelf.id)
            fileId = try library.fileIds(of: bookId)[0]
            try library.savePosition(of: bookId, file: fileId, offset: 10)
            _ = try library.addBookmark(to: bookId, file: fileId, offset: 1, title: "m")
            before = try Snapshot(library)
        }
    }

    @Test("A read-only database file: reads work, writes fail with .unavailable",
          .enabled(if: !isRoot || canMakeImmutable, "root ignores file modes and can't chattr +i here"))
    func readOnlyFile() throws {
        let prepared = try Prepared()
        let path = prepared.path
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        // Root ignores file modes: make the file immutable instead (the directory stays writable).
        if isRoot {
            let immutable = try run("chattr", ["+i", path])
            try #require(immutable.status == 0, "chattr +i: \(immutable.stderr)")
        } else {
            #expect(chmod(path, 0o444) == 0)
        }
        defer {
            if isRoot { _ = try? run("chattr", ["-i", path]) } else { _ = chmod(path, 0o644) }
        }
        #expect(FileHandle(forWritingAtPath: path) == nil, "the file is writable")
        try checkReadOnly(prepared)
    }

    @Test("A read-only database file in a read-only directory: reads work, writes fail with .unavailable",
          .enabled(if: !isRoot || canMount, "root ignores file modes and can't mount a read-only bind mount here"))
    func readOnlyDirectory() throws {
        let prepared = try Prepared()
        let (data, path) = (prepared.data, prepared.path)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        // Root ignores file modes: make the directory a read-only mount instead.
        let mounted = isRoot
        if mounted {
            let bind = try run("mount", ["--bind", data, data])
            try #require(bind.status == 0, "mount --bind: \(bind.stderr)")
            let ro = try run("mount", ["-o", "remount,ro,bind", data])
            if ro.status != 0 { try run("umount", [data]) }
            try #require(ro.status == 0, "remount ro: \(ro.stderr)")
        } else {
            #expect(chmod(path, 0o444) == 0)
            #expect(chmod(data, 0o555) == 0)
        }
        defer {
            if mounted {
                if (try? run("umount", [data]))?.status != 0 { _ = try? run("umount", ["-l", data]) }
            } else {
                _ = chmod(data, 0o755)
                _ = chmod(path, 0o644)
            }
        }
        #expect(FileManager.default.createFile(atPath: data + "/probe", contents: Data()) == false, "the directory is writable")
        #expect(FileHandle(forWritingAtPath: path) == nil, "the file is writable")
        try checkReadOnly(prepared)
    }

    private func checkReadOnly(_ prepared: Prepared) throws {
        let library = try Library(path: prepared.path)
        let (before, bookId, fileId) = (prepared.before, prepared.bookId, prepared.fileId)
        #expect(library.movedAsideCorruptFile == nil)
        #expect(library.isReadOnly)
        #expect(library.health.canSave == false)
        #expect(library.health.lastError.contains("read-only"), "\(library.health.lastError)")
        #expect(try Snapshot(library) == before)
        #expect(try library.integrityCheck() == "ok")
        #expect(try library.everyMatch(LibraryQuery(title: "ro")).map(\.id) == [bookId])
        #expect(try library.everyMatch(LibraryQuery(title: "RO")).map(\.id) == [bookId])
        expectError(.unavailable) { try library.createShelf(named: "New", in: nil) }
        expectError(.unavailable) { try library.importBook(importedBook("/new"), into: nil) }
        expectError(.unavailable) { try library.savePosition(of: bookId, file: fileId, offset: 99) }
        expectError(.unavailable) { try library.setCurrentBook(bookId) }
        expectError(.unavailable) { try library.setNote(of: bookId, "x") }
        expectError(.unavailable) { try library.deleteBook(bookId) }
        // A refused argument is still reported as such.
        expectError(.invalidArgument) { try library.createShelf(named: "", in: nil) }
        #expect(try Snapshot(library) == before)
    }

    @Test("A full disk: the import that doesn't fit fails with .unavailable and the library is intact",
          .enabled(if: canMount, "mounting a small tmpfs needs root with CAP_SYS_ADMIN"))
    func fullDisk() throws {
        try withSmallDisk { mountPoint in try fullDisk(mountPoint) }
    }

    private func fullDisk(_ mountPoint: String) throws {
        let path = mountPoint + "/library.sqlite"
        let before: Snapshot
        do {
            let library = try Library(path: path)
            let shelf = try library.createShelf(named: "Shelf", in: nil)
            let id = try library.add(importedBook("/small"), into: shelf.id)
            let file = try library.fileIds(of: id)[1]
            try library.savePosition(of: id, file: file, offset: 5)
            _ = try library.addBookmark(to: id, file: file, offset: 3, title: "m")
            try library.setCurrentBook(id)
            let start = try Snapshot(library)

            let huge = importedBook("/huge", files: (0..<2000).map { index in
                track("/huge/\(index).mp3", title: String(repeating: "t", count: 300), artist: String(repeating: "a", count: 300),
                      album: "Huge", chapters: [.init(title: String(repeating: "c", count: 300), start: 0, end: nil)])
            })
            expectError(.unavailable) { try library.importBook(huge, into: nil) }
            #expect(try Snapshot(library) == start)
            #expect(try library.integrityCheck() == "ok")
            #expect(try library.bookCount() == 1)
            // The rolled-back frames are reused: a small write works again.
            try library.setNote(of: id, "after the full disk")
            #expect(try library.book(id).note == "after the full disk")
            before = try Snapshot(library)
        }
        // Closed and opened again on the (still nearly full) disk: the same content.
        let library = try Library(path: path)
        #expect(library.movedAsideCorruptFile == nil)
        #expect(try Snapshot(library) == before)
        #expect(try library.integrityCheck() == "ok")
    }

    @Test("A full disk while running: positions are kept in memory and written once there is room; told once",
          .enabled(if: canMount, "mounting a small tmpfs needs root with CAP_SYS_ADMIN"))
    func fullDiskWhileRunning() throws {
        try withSmallDisk { mountPoint in try fullDiskWhileRunning(mountPoint) }
    }

    private func fullDiskWhileRunning(_ mountPoint: String) throws {
        let path = mountPoint + "/library.sqlite"
        let (bookId, fileId, otherFile): (Int64, Int64, Int64)
        do {
            let library = try Library(path: path)
            let told = Mutex<[LibraryHealth]>([])
            library.observeHealth { health in told.withLock { $0.append(health) } }
            bookId = try library.add(importedBook("/full"))
            (fileId, otherFile) = (try library.fileIds(of: bookId)[0], try library.fileIds(of: bookId)[1])
            try library.savePosition(of: bookId, file: fileId, offset: 1_000)
            #expect(library.health == LibraryHealth(canSave: true, lastError: "", unsaved: 0))

            // Fill the disk (dd stops at ENOSPC).
            _ = try run("dd", ["if=/dev/zero", "of=\(mountPoint)/filler", "bs=4096"])
            for second in 1...5 {
                expectError(.unavailable) { try library.savePosition(of: bookId, file: otherFile, offset: Int64(second) * 1_000_000) }
            }
            expectError(.unavailable) { try library.setCurrentBook(bookId) }
            expectError(.unavailable) { try library.createShelf(named: "No room", in: nil) }
            #expect(library.health.canSave == false)
            #expect(library.health.lastError.contains("full"), "\(library.health.lastError)")
            #expect(library.health.unsaved == 2)
            // Reads still work, and show what is saved on disk.
            #expect(try library.book(bookId).positionOffset == 1_000)
            #expect(try library.currentBook() == nil)
            #expect(library.retryUnsavedWrites() == false)
            // Told once that writes fail, not once per failed write.
            #expect(told.withLock { $0.map(\.canSave) } == [false])

            try FileManager.default.removeItem(atPath: mountPoint + "/filler")
            #expect(library.retryUnsavedWrites())
            #expect(library.health == LibraryHealth(canSave: true, lastError: "", unsaved: 0))
            #expect(told.withLock { $0.map(\.canSave) } == [false, true])
            let book = try library.book(bookId)
            #expect(book.positionFileId == otherFile)
            #expect(book.positionOffset == 5_000_000)
            #expect(try library.integrityCheck() == "ok")
        }
        // Written to the file, not only in memory.
        let again = try Library(path: path)
        #expect(try again.book(bookId).positionOffset == 5_000_000)
        #expect(try again.currentBook() == bookId)
        #expect(try again.allShelves().isEmpty)
    }

    @Test("Once there is room again, a newer position saved before the retry is the one kept, not the older one kept in memory",
          .enabled(if: canMount, "mounting a small tmpfs needs root with CAP_SYS_ADMIN"))
    func newerWriteAfterAFullDisk() throws {
        try withSmallDisk { mountPoint in
            let library = try Library(path: mountPoint + "/library.sqlite")
            let bookId = try library.add(importedBook("/full"))
            let (fileId, otherFile) = (try library.fileIds(of: bookId)[0], try library.fileIds(of: bookId)[1])
            let before = Date(timeIntervalSince1970: 1_700_000_000)
            try library.markPlayed(bookId, at: before)
            _ = try run("dd", ["if=/dev/zero", "of=\(mountPoint)/filler", "bs=4096"])
            expectError(.unavailable) { try library.savePosition(of: bookId, file: otherFile, offset: 2_000_000) }
            expectError(.unavailable) { try library.markPlayed(bookId, at: before.addingTimeInterval(60)) }
            #expect(library.health.unsaved == 1)  // one book

            try FileManager.default.removeItem(atPath: mountPoint + "/filler")
            // The first write that works also writes what was kept: the position, but not the older date over its own.
            try library.markPlayed(bookId, at: before.addingTimeInterval(120))
            #expect(library.health == LibraryHealth(canSave: true, lastError: "", unsaved: 0))
            var book = try library.book(bookId)
            #expect(book.lastPlayedAt == before.addingTimeInterval(120))
            #expect(book.positionFileId == otherFile)
            #expect(book.positionOffset == 2_000_000)

            // The same for a position.
            _ = try run("dd", ["if=/dev/zero", "of=\(mountPoint)/filler", "bs=4096"])
            expectError(.unavailable) { try library.savePosition(of: bookId, file: otherFile, offset: 4_000_000) }
            try FileManager.default.removeItem(atPath: mountPoint + "/filler")
            #expect(try library.savePosition(of: bookId, file: fileId, offset: 5_000_000))
            #expect(library.health.unsaved == 0)
            book = try library.book(bookId)
            #expect(book.positionFileId == fileId)
            #expect(book.positionOffset == 5_000_000)
        }
    }

    @Test("The database file deleted while open: writes are refused and kept in memory, reads go on")
    func deletedWhileOpen() throws {
        let t = try TestLibrary()
        let library = t.library
        let bookId = try library.add(importedBook("/gone"))
        let fileId = try library.fileIds(of: bookId)[0]
        try FileManager.default.removeItem(atPath: t.path)
        expectError(.unavailable) { try library.createShelf(named: "Lost", in: nil) }
        expectError(.unavailable) { try library.savePosition(of: bookId, file: fileId, offset: 42) }
        #expect(library.health.canSave == false)
        #expect(library.health.lastError.contains("deleted"), "\(library.health.lastError)")
        #expect(library.health.unsaved == 1)
        #expect(library.retryUnsavedWrites() == false)
        #expect(try library.book(bookId).title == "gone")
    }
}
