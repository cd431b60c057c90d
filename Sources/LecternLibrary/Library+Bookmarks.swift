import Foundation
import GRDB

// Bookmarks: a named place in one of a book's files.
extension Library {
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

    /// Adds bookmarks made elsewhere (an export, another player) to a book, in one transaction: all or none. One
    /// already there, at the same place of the same file with the same title, is skipped, so importing twice adds
    /// nothing. Returns how many were added and skipped.
    public func importBookmarks(to book: Int64, _ bookmarks: [Bookmark]) throws -> (added: Int, skipped: Int) {
        for bookmark in bookmarks {
            _ = try Self.checkName(bookmark.title, "a bookmark's title")
            try Self.checkNote(bookmark.note)
            guard bookmark.offset >= 0 else { throw LibraryError.invalidArgument("a bookmark's offset can't be negative") }
        }
        return try write { db in
            _ = try Self.existingBook(db, book)
            let files = Set(try Int64.fetchAll(db, sql: "SELECT id FROM bookFile WHERE bookId = ?", arguments: [book]))
            var added = 0, skipped = 0
            for var bookmark in bookmarks {
                guard files.contains(bookmark.fileId) else { throw LibraryError.notFound("book \(book) has no file \(bookmark.fileId)") }
                let title = try Self.checkName(bookmark.title, "a bookmark's title")
                let existing = try Bookmark.filter(Column("bookId") == book && Column("fileId") == bookmark.fileId
                                                   && Column("offset") == bookmark.offset && Column("title") == title).fetchCount(db)
                if existing > 0 { skipped += 1; continue }
                bookmark.id = nil
                bookmark.bookId = book
                bookmark.title = title
                try bookmark.insert(db)
                added += 1
            }
            return (added, skipped)
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
