import Foundation
import GRDB
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The library: one SQLite database (WAL, via a GRDB `DatabasePool`) and every operation on it, each in
/// one transaction that either completes or changes nothing.
///
/// ```swift
/// let library = try Library(path: dataDirectory + "/library.sqlite")
/// let shelf = try library.createShelf(named: "Discworld", in: nil)
/// ```
public final class Library: Sendable {
    /// Where reads go: the pool (or queue), or a snapshot of it (``snapshot()``).
    let reader: any DatabaseReader
    /// Where writes go; nil in a snapshot.
    let writer: (any DatabaseWriter)?
    /// Set when the file at the path was corrupt and had to be moved aside: where it went.
    public let movedAsideCorruptFile: String?
    /// True when the file could only be opened read-only (file mode, immutable file, read-only directory or
    /// file system): everything can be read, nothing can be saved.
    public let isReadOnly: Bool
    /// The database file and its identity when opened, to notice it being deleted or replaced; nil in memory.
    let file: (path: String, identity: FileIdentity?)?
    /// Whether writes work, what failed last, and the playback bookkeeping waiting to be written.
    let state = Mutex<WriteState>(WriteState())

    /// Opens (creating and migrating) the database at `path`, after checking every page of it
    /// (`PRAGMA quick_check`). A corrupt file is moved aside to `path.corrupt-<date>` (with `-2`, `-3`… when
    /// that name is taken; never deleted) and a new library starts; ``movedAsideCorruptFile`` says so.
    /// A file that can't be written is opened read-only (``isReadOnly``).
    public init(path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty { try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
        var aside: String? = nil
        var readOnly = false
        let opened: any DatabaseWriter
        do {
            if Self.cannotWrite(path, directory) {
                readOnly = true
                opened = try Self.openReadOnly(path)
            } else {
                opened = try Self.open(path)
            }
        } catch let error as DatabaseError where Self.isCorrupt(error) && !readOnly {
            aside = try Self.moveAside(path)
            opened = try Self.open(path)
        } catch let error as DatabaseError where Self.isWriteFailure(error) && !readOnly
                                                  && FileManager.default.fileExists(atPath: path) {
            // The checks above said writable, SQLite says otherwise (e.g. a read-only file system).
            readOnly = true
            opened = try Self.openReadOnly(path)
        } catch let error as DatabaseError {
            throw Self.translate(error)
        }
        writer = opened
        reader = opened
        movedAsideCorruptFile = aside
        isReadOnly = readOnly
        file = (path, FileIdentity(path))
        if readOnly {
            state.withLock { $0.failure = "the library database \(path) is read-only: changes can't be saved" }
        }
    }

    /// An in-memory library, for tests.
    public init() throws {
        let queue = try DatabaseQueue(configuration: Self.configuration())
        try Schema.migrator.migrate(queue)
        writer = queue
        reader = queue
        movedAsideCorruptFile = nil
        isReadOnly = false
        file = nil
    }

    private init(snapshot: DatabaseSnapshot) {
        writer = nil
        reader = snapshot
        movedAsideCorruptFile = nil
        isReadOnly = true
        file = nil
        state.withLock { $0.failure = "a snapshot of the library is never written" }
    }

    /// The library as it is now, frozen: reads on it see none of the changes made after this call. Long reads
    /// (a listing of every book) run on it off the D-Bus call queue, with the result the call had when it
    /// arrived. Costs a connection of its own (about a millisecond); released with the last reference.
    /// An in-memory or read-only library is its own snapshot (nothing else writes to the read-only one).
    public func snapshot() throws -> Library {
        guard let pool = writer as? DatabasePool else { return self }
        do {
            return Library(snapshot: try pool.makeSnapshot())
        } catch let error as DatabaseError {
            throw Self.translate(error)
        }
    }

    static func configuration(readOnly: Bool = false) -> Configuration {
        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(5)
        config.readonly = readOnly
        config.prepareDatabase { db in db.add(function: Folding.function) }
        return config
    }

    private static func open(_ path: String) throws -> DatabasePool {
        let pool = try DatabasePool(path: path, configuration: configuration())
        do {
            // Every page, now: a file whose header and schema are sound but a page in the middle is not is found
            // at start-up rather than by the query that reaches that page. ~1 s per 100 MB (docs/benchmarks.md).
            try pool.read { db in try Self.quickCheck(db) }
            try Schema.migrator.migrate(pool)
        } catch {
            try? pool.close()
            throw error
        }
        return pool
    }

    /// Opens a file that can't be written: plainly (SQLite reads a WAL file read-only when its -shm can be made
    /// or exists), else as immutable (a read-only directory: nothing can change it while we read).
    private static func openReadOnly(_ path: String) throws -> DatabaseQueue {
        func plain() throws -> DatabaseQueue {
            let queue = try DatabaseQueue(path: path, configuration: configuration(readOnly: true))
            try queue.read { db in _ = try Row.fetchAll(db, sql: "SELECT name FROM sqlite_master") }
            return queue
        }
        let queue: DatabaseQueue
        do {
            queue = try plain()
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CANTOPEN {
            queue = try DatabaseQueue(path: URL(fileURLWithPath: path).absoluteString + "?immutable=1",
                                      configuration: configuration(readOnly: true))
        }
        try queue.read { db in try Self.quickCheck(db) }
        return queue
    }

    /// Throws SQLITE_CORRUPT unless `PRAGMA quick_check` says "ok".
    private static func quickCheck(_ db: Database) throws {
        let report = try String.fetchAll(db, sql: "PRAGMA quick_check")
        guard report == ["ok"] else {
            throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "quick_check: " + report.prefix(3).joined(separator: "; "))
        }
    }

    static func isCorrupt(_ error: DatabaseError) -> Bool {
        error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
    }

    static func isWriteFailure(_ error: DatabaseError) -> Bool {
        [.SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_IOERR, .SQLITE_FULL].contains(error.resultCode)
    }

    /// An existing file that this process can't write, or whose directory it can't write (SQLite makes its
    /// -wal and -shm files there). `access` also answers for root: an immutable file or a read-only mount.
    private static func cannotWrite(_ path: String, _ directory: String) -> Bool {
        guard FileManager.default.fileExists(atPath: path) else { return false }
        return access(path, W_OK) != 0 || access(directory.isEmpty ? "." : directory, W_OK) != 0
    }

    /// Moves the corrupt file (and its -wal and -shm) to a name of its own; never over an existing file.
    private static func moveAside(_ path: String) throws -> String {
        let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
        let base = path + ".corrupt-" + stamp
        let taken = { (name: String) in
            ["", "-wal", "-shm"].contains { FileManager.default.fileExists(atPath: name + $0) }
        }
        var aside = base
        var number = 2
        // link + unlink rather than rename: link refuses an existing name, so a race can't overwrite a kept file.
        while true {
            if !taken(aside) {
                if link(path, aside) == 0 { break }
                let code = errno
                // A file system without hard links (vfat): rename to the name just found free.
                if code == EPERM || code == EOPNOTSUPP, rename(path, aside) == 0 { return moveCompanions(path, aside) }
                guard code == EEXIST else {
                    throw LibraryError.unavailable("cannot move the corrupt library \(path) aside to \(aside): \(String(cString: strerror(code)))")
                }
            }
            aside = base + "-\(number)"
            number += 1
        }
        unlink(path)
        return moveCompanions(path, aside)
    }

    /// Moves the -wal and -shm of a file moved aside beside it; returns `aside`.
    private static func moveCompanions(_ path: String, _ aside: String) -> String {
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            if link(path + suffix, aside + suffix) == 0 { unlink(path + suffix) } else { rename(path + suffix, aside + suffix) }
        }
        return aside
    }

    /// `PRAGMA integrity_check`: "ok" when the file is sound, else SQLite's report (or its error).
    public func integrityCheck() throws -> String {
        do {
            return try reader.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
        } catch let error as DatabaseError where Self.isCorrupt(error) {
            return error.message ?? "database disk image is malformed"
        } catch let error as DatabaseError {
            throw Self.translate(error)
        }
    }

    // MARK: - Transactions

    /// One write: `body` in a transaction, or with `transaction: false` as it is, for a body whose one statement
    /// that writes is atomic alone (SQLite's own transaction around it, without GRDB's BEGIN and COMMIT statements).
    /// A write that fails because the database can't be written (read-only, full disk, the file deleted, an I/O
    /// error) is reported through ``health`` and the observer; the first one that works afterwards also writes the
    /// bookkeeping kept in memory meanwhile (``savePosition(of:file:offset:)``...), after `forget` has dropped
    /// what this write made stale.
    func write<T>(transaction: Bool = true, forget: (inout WriteState) -> Void = { _ in },
                  _ body: (Database) throws -> T) throws -> T {
        let result: T
        do {
            try checkWritable()
            guard let writer else { preconditionFailure("a snapshot of the library is never written") }
            result = try transaction ? writer.write(body) : writer.writeWithoutTransaction(body)
        } catch let error as LibraryError {
            throw error
        } catch let error as DatabaseError {
            let translated = Self.translate(error)
            if Self.isWriteFailure(error) || Self.isCorrupt(error) { writeFailed(translated.description) }
            throw translated
        }
        state.withLock { forget(&$0) }
        writeSucceeded()
        return result
    }

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try reader.read(body)
        } catch let error as LibraryError {
            throw error
        } catch let error as DatabaseError {
            throw Self.translate(error)
        }
    }

    static func translate(_ error: DatabaseError) -> LibraryError {
        switch error.resultCode {
        case .SQLITE_CONSTRAINT:
            if error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
                return .invalidArgument("that name is already taken there")
            }
            return .invalidArgument(error.message ?? "not allowed")
        case .SQLITE_READONLY, .SQLITE_FULL, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_IOERR, .SQLITE_CANTOPEN, .SQLITE_PERM:
            return .unavailable("the library can't be written: \(error.message ?? "\(error.resultCode)")")
        default:
            return .unavailable("database error: \(error.message ?? "\(error.resultCode)")")
        }
    }

    static func checkName(_ name: String, _ what: String) throws -> String {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw LibraryError.invalidArgument("\(what) can't be empty") }
        // Counted as SQLite's length() counts (code points), so the schema's CHECK agrees.
        guard trimmed.unicodeScalars.count <= Limits.name else {
            throw LibraryError.invalidArgument("\(what) is longer than \(Limits.name) characters")
        }
        guard !trimmed.unicodeScalars.contains(where: { $0.value == 0 }) else { throw LibraryError.invalidArgument("\(what) contains a NUL character") }
        return trimmed
    }

    static func checkNote(_ note: String) throws {
        guard note.unicodeScalars.count <= Limits.note else {
            throw LibraryError.invalidArgument("the note is longer than \(Limits.note) characters")
        }
        guard !note.unicodeScalars.contains(where: { $0.value == 0 }) else {
            throw LibraryError.invalidArgument("the note contains a NUL character")
        }
    }

    /// `text` cut to `limit` code points (the unit of the schema's length checks).
    static func prefix(_ text: String, _ limit: Int) -> String {
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: text.unicodeScalars.prefix(limit))
        return String(scalars)
    }

    // MARK: - Shelves

    public func shelves(in parent: Int64?) throws -> [Shelf] {
        try read { db in
            if let parent { _ = try Self.existingShelf(db, parent) }
            return try Shelf.filter(Column("parentId") == parent).order(Column("name").collating(.localizedCaseInsensitiveCompare)).fetchAll(db)
        }
    }

    public func allShelves() throws -> [Shelf] {
        try read { db in try Shelf.order(Column("name")).fetchAll(db) }
    }

    public func shelf(_ id: Int64) throws -> Shelf {
        try read { db in try Self.existingShelf(db, id) }
    }

    static func existingShelf(_ db: Database, _ id: Int64) throws -> Shelf {
        guard let shelf = try Shelf.fetchOne(db, key: id) else { throw LibraryError.notFound("no shelf \(id)") }
        return shelf
    }

    public func createShelf(named name: String, in parent: Int64?) throws -> Shelf {
        let name = try Self.checkName(name, "a shelf's name")
        return try write { db in
            if let parent { _ = try Self.existingShelf(db, parent) }
            var shelf = Shelf(id: nil, parentId: parent, name: name)
            try shelf.insert(db)
            return shelf
        }
    }

    /// The shelf at a `/`-separated path of names from the top ("Series/Discworld"), created as needed.
    public func shelf(atPath path: String) throws -> Int64? {
        let names = try path.split(separator: "/").map { try Self.checkName(String($0), "a shelf's name") }
        guard !names.isEmpty else { return nil }
        return try write { db in
            var parent: Int64? = nil
            for name in names {
                if let existing = try Shelf.filter(Column("parentId") == parent && Column("name") == name).fetchOne(db) {
                    parent = existing.id
                } else {
                    var shelf = Shelf(id: nil, parentId: parent, name: name)
                    try shelf.insert(db)
                    parent = shelf.id
                }
            }
            return parent
        }
    }

    public func renameShelf(_ id: Int64, to name: String) throws {
        let name = try Self.checkName(name, "a shelf's name")
        try write { db in
            var shelf = try Self.existingShelf(db, id)
            shelf.name = name
            try shelf.update(db)
        }
    }

    /// Moves a shelf under `parent` (nil = top level); never into itself or its descendants.
    public func moveShelf(_ id: Int64, to parent: Int64?) throws {
        try write { db in
            var shelf = try Self.existingShelf(db, id)
            if let parent {
                _ = try Self.existingShelf(db, parent)
                let descendants = try Self.descendantShelves(db, of: id)
                guard parent != id, !descendants.contains(parent) else {
                    throw LibraryError.invalidArgument("a shelf can't be moved into itself or one of its own shelves")
                }
            }
            shelf.parentId = parent
            try shelf.update(db)
        }
    }

    /// Deletes a shelf; one that holds books or shelves only when `recursive` (its books go too).
    public func deleteShelf(_ id: Int64, recursive: Bool) throws {
        try write { db in
            _ = try Self.existingShelf(db, id)
            let shelves = try Self.descendantShelves(db, of: id) + [id]
            let books = try Book.filter(shelves.contains(Column("shelfId"))).fetchCount(db)
            guard recursive || (shelves.count == 1 && books == 0) else {
                throw LibraryError.invalidArgument("the shelf is not empty (\(shelves.count - 1) shelves, \(books) books): delete it recursively")
            }
            let deleted = try Int64.fetchAll(db, Book.select(Column("id")).filter(shelves.contains(Column("shelfId"))))
            try Book.filter(shelves.contains(Column("shelfId"))).deleteAll(db)
            try Shelf.deleteOne(db, key: id)
            for book in deleted {
                try db.execute(sql: "DELETE FROM setting WHERE key = 'currentBook' AND value = ?", arguments: [String(book)])
            }
        }
    }

    static func descendantShelves(_ db: Database, of id: Int64) throws -> [Int64] {
        try Int64.fetchAll(db, sql: """
            WITH RECURSIVE below(id) AS (SELECT id FROM shelf WHERE parentId = ?
                                         UNION ALL SELECT shelf.id FROM shelf JOIN below ON shelf.parentId = below.id)
            SELECT id FROM below
            """, arguments: [id])
    }

    // MARK: - Books

    /// The books on a shelf (nil = top level), and on the shelves below it when `recursive`.
    public func books(in shelf: Int64?, recursive: Bool) throws -> [Book] {
        try read { db in
            var request = Book.all()
            if let shelf {
                _ = try Self.existingShelf(db, shelf)
                let shelves = recursive ? try Self.descendantShelves(db, of: shelf) + [shelf] : [shelf]
                request = request.filter(shelves.contains(Column("shelfId")))
            } else if !recursive {
                request = request.filter(Column("shelfId") == nil)
            }
            return try request.order(Column("title").collating(.localizedCaseInsensitiveCompare)).fetchAll(db)
        }
    }

    public func book(_ id: Int64) throws -> Book {
        try read { db in try Self.existingBook(db, id) }
    }

    static func existingBook(_ db: Database, _ id: Int64) throws -> Book {
        guard let book = try Book.fetchOne(db, key: id) else { throw LibraryError.notFound("no book \(id)") }
        return book
    }

    /// The book's files in their order.
    public func files(of book: Int64) throws -> [BookFile] {
        try read { db in
            _ = try Self.existingBook(db, book)
            return try BookFile.filter(Column("bookId") == book).order(Column("position")).fetchAll(db)
        }
    }

    /// The book's chapters, by file id, in order.
    public func chapters(of book: Int64) throws -> [Int64: [Chapter]] {
        try read { db in
            _ = try Self.existingBook(db, book)
            let chapters = try Chapter.fetchAll(db, sql: """
                SELECT chapter.* FROM chapter JOIN bookFile ON bookFile.id = chapter.fileId
                WHERE bookFile.bookId = ? ORDER BY chapter.fileId, chapter.position
                """, arguments: [book])
            return Dictionary(grouping: chapters, by: \.fileId)
        }
    }

    public func renameBook(_ id: Int64, to title: String) throws {
        let title = try Self.checkName(title, "a book's title")
        try updateBook(id) { $0.title = title }
    }

    public func moveBook(_ id: Int64, to shelf: Int64?) throws {
        try write { db in
            if let shelf { _ = try Self.existingShelf(db, shelf) }
            var book = try Self.existingBook(db, id)
            book.shelfId = shelf
            book.modifiedAt = Date()
            try book.update(db)
        }
    }

    public func deleteBook(_ id: Int64) throws {
        try write { db in
            _ = try Self.existingBook(db, id)
            try Book.deleteOne(db, key: id)
            try db.execute(sql: "DELETE FROM setting WHERE key = 'currentBook' AND value = ?", arguments: [String(id)])
        }
    }

    /// Puts the book's files in the order of `fileIds`, which must name each of its files once.
    public func reorderFiles(of book: Int64, _ fileIds: [Int64]) throws {
        try write { db in
            _ = try Self.existingBook(db, book)
            let current = try Int64.fetchAll(db, sql: "SELECT id FROM bookFile WHERE bookId = ?", arguments: [book])
            guard Set(current) == Set(fileIds), current.count == fileIds.count else {
                throw LibraryError.invalidArgument("the new order must name each of the book's \(current.count) files exactly once")
            }
            for (index, file) in fileIds.enumerated() {
                try db.execute(sql: "UPDATE bookFile SET position = ? WHERE id = ?", arguments: [-1 - index, file])
            }
            try db.execute(sql: "UPDATE bookFile SET position = -1 - position WHERE bookId = ?", arguments: [book])
            try touch(db, book)
        }
    }

    public func setSettings(of book: Int64, _ settings: BookSettings) throws {
        guard settings.volume.isFinite, (0...10).contains(settings.volume) else {
            throw LibraryError.invalidArgument("volume must be between 0 and 10")
        }
        guard settings.speed.isFinite, (0.5...3).contains(settings.speed) else {
            throw LibraryError.invalidArgument("speed must be between 0.5 and 3")
        }
        guard ["None", "Track", "Playlist"].contains(settings.loop) else {
            throw LibraryError.invalidArgument("loop must be None, Track or Playlist")
        }
        try updateBook(book, touching: false) { $0.settings = settings }
    }

    /// Keeps the book's shuffled play order (its file ids); empty to forget it.
    public func setShuffleOrder(of book: Int64, _ fileIds: [Int64]) throws {
        let text = fileIds.map(String.init).joined(separator: ",")
        try updateBook(book, touching: false) { $0.shuffleOrder = text }
    }

    public func setNote(of book: Int64, _ note: String) throws {
        try Self.checkNote(note)
        try updateBook(book) { $0.note = note }
    }

    public func setFinished(_ book: Int64, _ finished: Bool) throws {
        try updateBook(book, touching: false) { $0.finished = finished }
    }

    private func updateBook(_ id: Int64, touching: Bool = true, _ change: (inout Book) -> Void) throws {
        try write { db in
            var book = try Self.existingBook(db, id)
            let before = book
            change(&book)
            guard book != before else { return }
            if touching { book.modifiedAt = Date() }
            try book.update(db)
        }
    }

    private func touch(_ db: Database, _ book: Int64) throws {
        try db.execute(sql: "UPDATE book SET modifiedAt = ? WHERE id = ?", arguments: [StoredDate.text(Date()), book])
    }

    // MARK: - Positions

    /// Saves where the book is; returns false (and writes nothing) when it is already saved there.
    /// `playedAt`, given while the book plays, is also noted as when it was last played, in the same write: after
    /// a crash the smart rewind counts from the last moment heard, not from when playback started.
    /// When the database can't be written, the position is kept in memory and written by the next write that
    /// works (or ``retryUnsavedWrites()``); the `.unavailable` error is thrown all the same.
    @discardableResult
    public func savePosition(of book: Int64, file: Int64, offset: Int64, playedAt: Date? = nil) throws -> Bool {
        let saved = try bookkeeping(transaction: false, keep: { $0.positions[book] = (file, max(0, offset)) },
                                    forget: { $0.positions[book] = nil }) { db in
            // Twice a second while playing: one cached statement in SQLite's own transaction (GRDB's BEGIN and
            // COMMIT cost more than the UPDATE), the book looked up only when it wrote nothing (the same position,
            // or no such book). A file of another book fails in the schema's trigger.
            if try Self.writePosition(db, book: book, file: file, offset: offset, playedAt: playedAt) { return true }
            guard try Self.bookExists(db, book) else { throw LibraryError.notFound("no book \(book)") }
            return false
        }
        return saved
    }

    static func writePosition(_ db: Database, book: Int64, file: Int64, offset: Int64, playedAt: Date? = nil) throws -> Bool {
        let statement = try db.cachedStatement(sql: """
            UPDATE book SET positionFileId = ?, positionOffset = ?, lastPlayedAt = coalesce(?, lastPlayedAt)
            WHERE id = ? AND (positionFileId IS NOT ? OR positionOffset <> ?)
            """)
        try statement.execute(arguments: [file, max(0, offset), playedAt.map(StoredDate.text), book, file, max(0, offset)])
        return db.changesCount > 0
    }

    static func bookExists(_ db: Database, _ id: Int64) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM book WHERE id = ?)"), arguments: [id]) ?? false
    }

    /// Notes when the book was played; kept in memory when the database can't be written (as positions are).
    public func markPlayed(_ book: Int64, at date: Date = Date()) throws {
        try bookkeeping(keep: { $0.played[book] = date }, forget: { $0.played[book] = nil }) { db in
            _ = try Self.existingBook(db, book)
            try db.execute(sql: "UPDATE book SET lastPlayedAt = ? WHERE id = ?", arguments: [StoredDate.text(date), book])
        }
    }

    /// The book that was current when the daemon last ran (as saved: not one kept in memory, unsaved).
    public func currentBook() throws -> Int64? {
        try read { db in
            try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = 'currentBook'").flatMap { Int64($0) }
        }
    }

    /// Kept in memory when the database can't be written (as positions are).
    public func setCurrentBook(_ book: Int64?) throws {
        try bookkeeping(keep: { $0.currentBook = .some(book) }, forget: { $0.currentBook = nil }) { db in
            if let book { _ = try Self.existingBook(db, book) }
            try Self.writeCurrentBook(db, book)
        }
    }

    static func writeCurrentBook(_ db: Database, _ book: Int64?) throws {
        if let book, try Book.exists(db, key: book) {
            try db.execute(sql: "INSERT OR REPLACE INTO setting(key, value) VALUES ('currentBook', ?)", arguments: [String(book)])
        } else {
            try db.execute(sql: "DELETE FROM setting WHERE key = 'currentBook'")
        }
    }

    // MARK: - Bookmarks

    public func bookmarks(of book: Int64) throws -> [Bookmark] {
        try read { db in
            _ = try Self.existingBook(db, book)
            return try Bookmark.fetchAll(db, sql: """
                SELECT bookmark.* FROM bookmark JOIN bookFile ON bookFile.id = bookmark.fileId
                WHERE bookmark.bookId = ? ORDER BY bookFile.position, bookmark.offset, bookmark.id
                """, arguments: [book])
        }
    }

    public func bookmark(_ id: Int64) throws -> Bookmark {
        try read { db in
            guard let bookmark = try Bookmark.fetchOne(db, key: id) else { throw LibraryError.notFound("no bookmark \(id)") }
            return bookmark
        }
    }

    public func addBookmark(to book: Int64, file: Int64, offset: Int64, title: String, note: String = "",
                            kind: Bookmark.Kind = .user) throws -> Bookmark {
        let title = try Self.checkName(title, "a bookmark's title")
        try Self.checkNote(note)
        guard offset >= 0 else { throw LibraryError.invalidArgument("a bookmark's offset can't be negative") }
        return try write { db in
            _ = try Self.existingBook(db, book)
            guard try BookFile.filter(Column("id") == file && Column("bookId") == book).fetchCount(db) == 1 else {
                throw LibraryError.notFound("book \(book) has no file \(file)")
            }
            var bookmark = Bookmark(id: nil, bookId: book, fileId: file, offset: offset, title: title, note: note,
                                    createdAt: Date(), kind: kind)
            try bookmark.insert(db)
            return bookmark
        }
    }

    public func renameBookmark(_ id: Int64, to title: String) throws {
        let title = try Self.checkName(title, "a bookmark's title")
        try updateBookmark(id) { $0.title = title }
    }

    public func setBookmarkNote(_ id: Int64, _ note: String) throws {
        try Self.checkNote(note)
        try updateBookmark(id) { $0.note = note }
    }

    public func deleteBookmark(_ id: Int64) throws {
        try write { db in
            guard try Bookmark.deleteOne(db, key: id) else { throw LibraryError.notFound("no bookmark \(id)") }
        }
    }

    private func updateBookmark(_ id: Int64, _ change: (inout Bookmark) -> Void) throws {
        try write { db in
            guard var bookmark = try Bookmark.fetchOne(db, key: id) else { throw LibraryError.notFound("no bookmark \(id)") }
            change(&bookmark)
            try bookmark.update(db)
        }
    }
}
