import Foundation
import GRDB
import Synchronization

/// The library: one SQLite database (WAL, via a GRDB `DatabasePool`) and every operation on it, each in
/// one transaction that either completes or changes nothing.
///
/// This file holds the type, its transactions and the checks of arguments; opening and recovery are in
/// Library+Opening.swift, each table's operations in Library+Shelves, +Books, +Positions, +Bookmarks (and
/// Queries, Import, Health).
///
/// ```swift
/// let library = try Library(path: dataDirectory + "/library.sqlite")
/// let shelf = try library.createShelf(named: "Discworld", in: nil)
/// ```
public final class Library: Sendable {
    /// The database: a pool (one writer, readers beside it, each connection kept open and reused), or a queue for
    /// an in-memory library or a file that can only be read.
    let database: any DatabaseWriter
    /// Set when the file at the path was corrupt and had to be moved aside: where it went.
    public let movedAsideCorruptFile: String?
    /// True when the file could only be opened read-only (file mode, immutable file, read-only directory or
    /// file system): everything can be read, nothing can be saved.
    public let isReadOnly: Bool
    /// The database file and its identity when opened, to notice it being deleted or replaced; nil in memory.
    let file: (path: String, identity: FileIdentity?)?
    /// Whether writes work, what failed last, and the playback bookkeeping waiting to be written.
    let state = Mutex<WriteState>(WriteState())
    /// The ranked ids of the last full-text searches, for their next pages.
    let rankings = Mutex<SearchRankings>(SearchRankings())

    /// Opens (creating and migrating) the database at `path`, after checking every page of it
    /// (`PRAGMA quick_check`). A corrupt file is moved aside to `path.corrupt-<date>` (with `-2`, `-3`… when
    /// that name is taken; never deleted) and a new library starts; ``movedAsideCorruptFile`` says so.
    /// A file that can't be written is opened read-only (``isReadOnly``).
    public init(path: String) throws {
        let opened = try Self.openFile(at: path)
        database = opened.writer
        movedAsideCorruptFile = opened.movedAside
        isReadOnly = opened.isReadOnly
        file = (path, FileIdentity(path))
        if opened.isReadOnly {
            state.withLock { $0.failure = "the library database \(path) is read-only: changes can't be saved" }
        }
    }

    /// An in-memory library, for tests.
    public init() throws {
        let queue = try DatabaseQueue(configuration: Self.configuration())
        try Schema.migrator.migrate(queue)
        database = queue
        movedAsideCorruptFile = nil
        isReadOnly = false
        file = nil
    }

    /// Closes the database, the last thing the daemon does: SQLite copies the write-ahead log into the file and
    /// removes the -wal and -shm files. Every later call fails. Reads still running finish first. When the file can't be
    /// closed the files stay, as after a crash, and SQLite recovers them at the next open.
    public func close() throws {
        // The readers first: GRDB's close ends with them, and a read-only connection that is the last can't remove the
        // log (GRDB issue 739). The writer, then last, checkpoints and removes it.
        (database as? DatabasePool)?.invalidateReadOnlyConnections()
        do { try database.close() } catch let error as DatabaseError { throw Self.translate(error) }
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
        // A write that changed nothing (a position saved where it already was) succeeds on a full disk too: it says
        // nothing of whether the library can be written again.
        var changed = false
        let counted: (Database) throws -> T = { db in
            let before = db.totalChangesCount
            defer { changed = db.totalChangesCount != before }
            return try body(db)
        }
        do {
            try checkWritable()
            result = try transaction ? database.write(counted) : database.writeWithoutTransaction(counted)
        } catch let error as LibraryError {
            throw error
        } catch let error as DatabaseError {
            let translated = Self.translate(error)
            if Self.isWriteFailure(error) || Self.isCorrupt(error) { writeFailed(translated.description) }
            throw translated
        }
        state.withLock { forget(&$0) }
        if changed { writeSucceeded() }
        return result
    }

    /// One read: `body` in a read transaction on one of the pool's reader connections (kept open: its schema parsed, its
    /// functions registered, its cache of pages warm from earlier reads), or on the queue's one connection. It sees
    /// every write that ended before it began, and none made while it runs; in a pool, the writer and the other
    /// readers go on meanwhile.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try database.read(body)
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

    // MARK: - Checks of arguments

    static func checkName(_ name: String, _ what: String) throws -> String {
        let trimmed = Self.trimmed(name)
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

    /// `name` without the white space and newlines around it (Foundation's `trimmingCharacters(in:)`, which an import
    /// of one-file books spent more on than on a book's insert): as it is when it begins and ends with ASCII that is neither.
    static func trimmed(_ name: String) -> String {
        func isPlain(_ scalar: Unicode.Scalar?) -> Bool {
            guard let scalar, scalar.isASCII else { return false }
            return scalar != " " && !(9...13).contains(scalar.value)
        }
        let scalars = name.unicodeScalars
        if isPlain(scalars.first) && isPlain(scalars.last) { return name }
        return name.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// `text` cut to `limit` code points (the unit of the schema's length checks).
    static func prefix(_ text: String, _ limit: Int) -> String {
        // Never more code points than UTF-8 bytes.
        if text.utf8.count <= limit { return text }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: text.unicodeScalars.prefix(limit))
        return String(scalars)
    }
}
