import DBus
import LecternBooks
import LecternLibrary

// org.lectern.Bookmarks1, the face: each method decodes its arguments, calls the library (or LibraryRules) and
// announces BookmarksChanged for the book whose bookmarks changed.
extension LibraryService {
    func bookmarksInterfaceDeclaration(_ rules: LibraryRules) -> Interface {
        let dict = DBusType.dictionary(key: .string, value: .variant)
        return Interface(Self.bookmarksInterface,
            methods: [
                method("AddBookmark", in: [("book", .int64), ("title", .string), ("note", .string)], out: [("id", .int64)]) { call in
                    let (bookId, title, note) = try call.arguments(Int64.self, String.self, String.self)
                    let bookmark = try await rules.addBookmark(to: bookId, title: title, note: note)
                    self.bookmarksChanged(bookId)
                    self.bookmarkAdded(bookmark.title)
                    return [.int64(bookmark.id ?? 0)]
                },
                method("RenameBookmark", in: [("id", .int64), ("title", .string)]) { call in
                    let (id, title) = try call.arguments(Int64.self, String.self)
                    try await self.writer.write { try $0.renameBookmark(id, to: title) }
                    self.bookmarksChanged(try await self.library.reading { try $0.bookmark(id) }.bookId)
                    return []
                },
                method("SetBookmarkNote", in: [("id", .int64), ("note", .string)]) { call in
                    let (id, note) = try call.arguments(Int64.self, String.self)
                    try await self.writer.write { try $0.setBookmarkNote(id, note) }
                    self.bookmarksChanged(try await self.library.reading { try $0.bookmark(id) }.bookId)
                    return []
                },
                method("DeleteBookmark", in: [("id", .int64)]) { call in
                    let id: Int64 = try call.argument(0)
                    let bookmark = try await self.library.reading { try $0.bookmark(id) }
                    try await self.writer.write { try $0.deleteBookmark(id) }
                    self.bookmarksChanged(bookmark.bookId)
                    return []
                },
                method("ListBookmarks", in: [("book", .int64)], out: [("bookmarks", .array(dict))]) { call in
                    let book: Int64 = try call.argument(0)
                    return [.array(dict, try await self.library.reading { try $0.bookmarks(of: book) }.map(Self.encode))]
                },
                method("ImportBookmarks", in: [("book", .int64), ("bookmarks", .array(dict))],
                       out: [("added", .uint32), ("skipped", .uint32)]) { call in
                    let (bookId, entries) = try call.arguments(Int64.self, [[String: DBusValue]].self)
                    let files = try await self.library.reading { try $0.files(of: bookId) }
                    let bookmarks = try entries.enumerated().map { n, entry in
                        try Self.importedBookmark(entry, number: n + 1, book: bookId, files: files)
                    }
                    let result = try await self.writer.write { try $0.importBookmarks(to: bookId, bookmarks) }
                    if result.added > 0 { self.bookmarksChanged(bookId) }
                    return [.uint32(UInt32(result.added)), .uint32(UInt32(result.skipped))]
                },
                Self.activating("JumpToBookmark", in: [("id", .int64)]) { call in
                    try await rules.jump(toBookmark: call.argument(0))
                },
            ],
            signals: [SignalDecl("BookmarksChanged", [("book", .int64)])])
    }
}
