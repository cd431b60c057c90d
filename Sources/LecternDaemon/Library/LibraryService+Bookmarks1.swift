import DBus
import LecternLibrary

// org.lectern.Bookmarks1, the face: each method decodes its arguments, calls the library (or LibraryRules) and
// announces BookmarksChanged for the book whose bookmarks changed.
extension LibraryService {
    var bookmarksInterfaceDeclaration: Interface {
        let dict = DBusType.dictionary(key: .string, value: .variant)
        return Interface(Self.bookmarksInterface,
            methods: [
                method("AddBookmark", in: [("book", .int64), ("title", .string), ("note", .string)], out: [("id", .int64)]) { a in
                    let bookId = a[0].int64 ?? 0
                    let bookmark = try await self.rules.addBookmark(to: bookId, title: a[1].string ?? "", note: a[2].string ?? "")
                    self.bookmarksChanged(bookId)
                    return [.int64(bookmark.id ?? 0)]
                },
                method("RenameBookmark", in: [("id", .int64), ("title", .string)]) { a in
                    try self.library.renameBookmark(a[0].int64 ?? 0, to: a[1].string ?? "")
                    self.bookmarksChanged(try self.library.bookmark(a[0].int64 ?? 0).bookId)
                    return []
                },
                method("SetBookmarkNote", in: [("id", .int64), ("note", .string)]) { a in
                    try self.library.setBookmarkNote(a[0].int64 ?? 0, a[1].string ?? "")
                    self.bookmarksChanged(try self.library.bookmark(a[0].int64 ?? 0).bookId)
                    return []
                },
                method("DeleteBookmark", in: [("id", .int64)]) { a in
                    let bookmark = try self.library.bookmark(a[0].int64 ?? 0)
                    try self.library.deleteBookmark(a[0].int64 ?? 0)
                    self.bookmarksChanged(bookmark.bookId)
                    return []
                },
                method("ListBookmarks", in: [("book", .int64)], out: [("bookmarks", .array(dict))]) { a in
                    [.array(dict, try self.library.bookmarks(of: a[0].int64 ?? 0).map(Self.encode))]
                },
                method("JumpToBookmark", in: [("id", .int64)]) { a in
                    try await self.rules.jump(toBookmark: a[0].int64 ?? 0)
                    return []
                },
            ],
            signals: [SignalDecl("BookmarksChanged", [("book", .int64)])])
    }
}
