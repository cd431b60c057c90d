import Foundation
import GRDB

// The playback bookkeeping: where each book is (saved twice a second while playing), when it was last played, and
// which book is current; each kept in memory while the database can't be written (Health.swift).
extension Library {
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
        try read { db in try Int64.fetchOne(db, sql: "SELECT bookId FROM currentBook") }
    }

    /// The book played last (by when it was last played), nil when none was ever played: what Play resumes with nothing
    /// loaded.
    public func lastPlayedBook() throws -> Int64? {
        try read { db in
            try Int64.fetchOne(db, sql: "SELECT id FROM book WHERE lastPlayedAt IS NOT NULL ORDER BY lastPlayedAt DESC, id DESC LIMIT 1")
        }
    }

    /// Kept in memory when the database can't be written (as positions are).
    public func setCurrentBook(_ book: Int64?) throws {
        try bookkeeping(keep: { $0.currentBook = .some(book) }, forget: { $0.currentBook = nil }) { db in
            if let book { _ = try Self.existingBook(db, book) }
            try Self.writeCurrentBook(db, book)
        }
    }

    /// No current book when `book` is nil or no longer exists (a deleted book takes its row of `currentBook` along).
    static func writeCurrentBook(_ db: Database, _ book: Int64?) throws {
        if let book, try Book.exists(db, key: book) {
            try db.execute(sql: "INSERT OR REPLACE INTO currentBook(id, bookId) VALUES (1, ?)", arguments: [book])
        } else {
            try db.execute(sql: "DELETE FROM currentBook")
        }
    }
}
