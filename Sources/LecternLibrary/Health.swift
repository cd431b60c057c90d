import Foundation
import GRDB
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Whether the library can save changes, as a client would be told.
///
/// ```swift
/// library.observeHealth { health in if !health.canSave { print(health.lastError) } }
/// ```
public struct LibraryHealth: Sendable, Equatable {
    /// False while the database is read-only or its last write failed.
    public var canSave: Bool
    /// Why the last write failed ("" when writes work).
    public var lastError: String
    /// Books whose position (or the current book, or when they were played) waits in memory to be written.
    public var unsaved: Int

    public init(canSave: Bool, lastError: String, unsaved: Int) {
        self.canSave = canSave
        self.lastError = lastError
        self.unsaved = unsaved
    }
}

/// A file's device and inode, to notice that the file at a path was deleted or replaced.
struct FileIdentity: Equatable, Sendable {
    let device: UInt64
    let inode: UInt64

    init?(_ path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}

/// Guarded by `Library.state`.
struct WriteState: Sendable {
    /// Why writes fail now; nil when they work.
    var failure: String?
    /// Positions that could not be written, by book: written by the next write that works.
    var positions: [Int64: (file: Int64, offset: Int64)] = [:]
    /// The current book, when setting it could not be written (.some(nil): none).
    var currentBook: Int64??
    var played: [Int64: Date] = [:]
    var observer: (@Sendable (LibraryHealth) -> Void)?

    var unsaved: Int { Set(positions.keys).union(played.keys).count + (currentBook == nil ? 0 : 1) }
    var health: LibraryHealth { LibraryHealth(canSave: failure == nil, lastError: failure ?? "", unsaved: unsaved) }
}

extension Library {
    /// Whether writes work now.
    public var health: LibraryHealth { state.withLock { $0.health } }

    /// Calls `observer` whenever ``health`` changes between working and failing (or fails for another reason),
    /// never for each failed write: a client is told once.
    public func observeHealth(_ observer: @escaping @Sendable (LibraryHealth) -> Void) {
        state.withLock { $0.observer = observer }
    }

    /// Throws `.unavailable` when nothing can be saved: the database is read-only, or its file was deleted or
    /// replaced while it was open (SQLite would go on writing to the deleted file, and all of it would be lost).
    public func checkWritable() throws {
        if isReadOnly { throw LibraryError.unavailable(state.withLock { $0.failure } ?? "the library is read-only") }
        if let file, FileIdentity(file.path) != file.identity {
            let message = "the library database \(file.path) was deleted or replaced while lecternd ran: changes can't be saved"
            writeFailed(message)
            throw LibraryError.unavailable(message)
        }
    }

    func writeFailed(_ message: String) {
        let (observer, health): ((@Sendable (LibraryHealth) -> Void)?, LibraryHealth?) = state.withLock { s in
            guard s.failure != message else { return (nil, nil) }
            s.failure = message
            return (s.observer, s.health)
        }
        if let observer, let health { observer(health) }
    }

    func writeSucceeded() {
        let (observer, health, pending): ((@Sendable (LibraryHealth) -> Void)?, LibraryHealth?, Bool) = state.withLock { s in
            let pending = s.unsaved > 0
            guard s.failure != nil else { return (nil, nil, pending) }
            s.failure = nil
            return (s.observer, s.health, pending)
        }
        if let observer, let health { observer(health) }
        if pending { retryUnsavedWrites() }
    }

    /// Writes the bookkeeping kept in memory while writes failed (positions, the current book, when books were
    /// played), in one transaction; a no-op when there is none. Returns whether nothing is left unsaved.
    @discardableResult
    public func retryUnsavedWrites() -> Bool {
        let (positions, current, played) = state.withLock { ($0.positions, $0.currentBook, $0.played) }
        guard !positions.isEmpty || current != nil || !played.isEmpty else { return true }
        do {
            try checkWritable()
            try database.write { db in
                for (book, place) in positions where try Book.exists(db, key: book) {
                    _ = try Self.writePosition(db, book: book, file: place.file, offset: place.offset)
                }
                for (book, date) in played where try Book.exists(db, key: book) {
                    try db.execute(sql: "UPDATE book SET lastPlayedAt = ? WHERE id = ?", arguments: [StoredDate.text(date), book])
                }
                if let current { try Self.writeCurrentBook(db, current) }
            }
        } catch let error as DatabaseError {
            writeFailed(Self.translate(error).description)
            return false
        } catch {
            return false
        }
        // Forget what was written, unless something newer came meanwhile.
        state.withLock { s in
            for (book, place) in positions where s.positions[book]?.file == place.file && s.positions[book]?.offset == place.offset {
                s.positions[book] = nil
            }
            for (book, date) in played where s.played[book] == date { s.played[book] = nil }
            if let current, s.currentBook == .some(current) { s.currentBook = nil }
        }
        writeSucceeded()
        return state.withLock { $0.unsaved == 0 }
    }

    /// Runs a bookkeeping write; when the database can't be written, `keep` remembers it for
    /// ``retryUnsavedWrites()`` and the error is thrown all the same. When it works, `forget` drops what was kept
    /// of the same thing before the kept rest is written (an older value must not overwrite this one).
    func bookkeeping<T>(transaction: Bool = true, keep: (inout WriteState) -> Void, forget: (inout WriteState) -> Void,
                        _ body: (Database) throws -> T) throws -> T {
        do {
            return try write(transaction: transaction, forget: forget, body)
        } catch LibraryError.unavailable(let message) {
            state.withLock { keep(&$0) }
            throw LibraryError.unavailable(message)
        }
    }
}
