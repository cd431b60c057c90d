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
