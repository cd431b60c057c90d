import Foundation
import GRDB

/// Where a book's files are: what says whether it is offline (``Book/offline``).
public struct BookPlace: Sendable, Equatable {
    public var id: Int64
    public var sourcePath: String?
    public var mountPath: String?
    public var offline: Bool

    public init(id: Int64, sourcePath: String?, mountPath: String?, offline: Bool) {
        self.id = id
        self.sourcePath = sourcePath
        self.mountPath = mountPath
        self.offline = offline
    }
}

/// How much of the library can't be played now.
public struct LibraryAvailability: Sendable, Equatable {
    public var offlineBooks: Int
    /// Files missing in books that are not offline.
    public var missingFiles: Int

    public init(offlineBooks: Int, missingFiles: Int) {
        self.offlineBooks = offlineBooks
        self.missingFiles = missingFiles
    }
}

// Files missing and books offline: what the library knows of the disk between imports.
extension Library {
    public func availability() throws -> LibraryAvailability {
        try read { db in
            LibraryAvailability(
                offlineBooks: try Int.fetchOne(db, sql: "SELECT count(*) FROM book WHERE offline") ?? 0,
                missingFiles: try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM bookFile f JOIN book b ON b.id = f.bookId WHERE NOT f.available AND NOT b.offline
                    """) ?? 0)
        }
    }

    /// Every book's folder, mount and state.
    public func bookPlaces() throws -> [BookPlace] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT id, sourcePath, mountPath, offline FROM book ORDER BY id").map {
                BookPlace(id: $0[0], sourcePath: $0[1], mountPath: $0[2], offline: $0[3])
            }
        }
    }

    /// Marks `books` offline, or not; the books whose state changed. Nothing else of them changes.
    @discardableResult
    public func setOffline(_ books: [Int64], _ offline: Bool) throws -> [Int64] {
        guard !books.isEmpty else { return [] }
        return try write { db in
            var changed: [Int64] = []
            let statement = try db.cachedStatement(sql: "UPDATE book SET offline = ? WHERE id = ? AND offline <> ?")
            for book in books {
                try statement.execute(arguments: [offline, book, offline])
                if db.changesCount > 0 { changed.append(book) }
            }
            return changed
        }
    }

    /// The present files at or below `path` that are no longer on disk, in books that are not offline (what an
    /// offline book's files are is not known): a `stat` of each, outside any transaction. For ``markMissing(_:)``.
    public func filesGone(under path: String) throws -> [Int64] {
        // The paths below it as a range of the path index: from "folder/" up to "folder0" ("0" follows "/").
        let prefix = path.hasSuffix("/") ? path : path + "/"
        let end = String(prefix.dropLast()) + "0"
        let present = try read { db in
            try Row.fetchAll(db, sql: """
                SELECT f.id, f.path FROM bookFile f JOIN book b ON b.id = f.bookId
                WHERE f.available AND NOT b.offline AND (f.path = ?1 OR (f.path >= ?2 AND f.path < ?3))
                """, arguments: [path, prefix, end])
        }
        return present.filter { !FileManager.default.fileExists(atPath: $0[1]) }.map { $0[0] }
    }

    /// Marks `files` missing; the books that changed. The files keep their rows, and so the positions and
    /// bookmarks in them.
    @discardableResult
    public func markMissing(_ files: [Int64]) throws -> [Int64] {
        guard !files.isEmpty else { return [] }
        return try write { db in
            var books: Set<Int64> = []
            let statement = try db.cachedStatement(sql: "UPDATE bookFile SET available = 0 WHERE id = ? AND available RETURNING bookId")
            for file in files {
                if let book = try Int64.fetchOne(statement, arguments: [file]) { books.insert(book) }
            }
            return books.sorted()
        }
    }
}
