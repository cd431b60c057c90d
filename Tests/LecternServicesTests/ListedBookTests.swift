import DBus
import Foundation
import LecternLibrary
import Testing
import TestSupport
@testable import LecternServices

/// A listed book (ListBooks, ListBooksPage, Find, Search) as the struct dbus/org.lectern.Library1.xml documents.
@Suite struct ListedBookTests {
    /// A book with a value of its own in every field a listing gives.
    static func distinctBook() throws -> Book {
        let library = try Library()
        let imported = ImportedBook(sourcePath: "/books/Source", albumKey: "", title: "The Title", author: "An Author",
                                    coverPath: "/books/Source/cover.jpg", files: [.init(path: "/books/Source/1.mp3", duration: 1)])
        var book = try library.book(try library.importBook(imported, into: nil).id)
        book.id = 101
        book.shelfId = 102
        book.narrator = "A Narrator"
        book.positionFileId = 103
        book.positionOffset = 104
        book.finished = true
        book.addedAt = Date(timeIntervalSince1970: 105)
        book.modifiedAt = Date(timeIntervalSince1970: 106)
        book.lastPlayedAt = Date(timeIntervalSince1970: 107)
        return book
    }

    @Test func eachFieldHoldsTheValueOfItsName() throws {
        let book = try Self.distinctBook()
        let values = LibraryService.listedValues(book, BookTotals(files: 9, available: 1, duration: 108))
        let listed = Dictionary(uniqueKeysWithValues: zip(LibraryService.listedFields, values))
        let expected: [String: DBusValue] = [
            "id": .int64(101), "shelf": .int64(102), "title": .string("The Title"), "author": .string("An Author"),
            "narrator": .string("A Narrator"), "cover": .string("/books/Source/cover.jpg"), "source": .string("/books/Source"),
            "state": .string("available"), "files": .uint32(9), "missing": .uint32(8), "duration": .int64(108),
            "position_file": .int64(103), "position_offset": .int64(104), "finished": .boolean(true),
            "added": .int64(105_000_000), "modified": .int64(106_000_000), "last_played": .int64(107_000_000),
        ]
        #expect(values.count == LibraryService.listedFields.count)
        #expect(listed == expected)
        #expect(DBusValue.structure(values).type == LibraryService.listedBook)
        #expect(LibraryService.listedBook.signature == "(xxssssssuuxxxbxxx)")
    }

    @Test func anOfflineBookHasNoMissingFiles() throws {
        var book = try Self.distinctBook()
        book.offline = true
        let values = LibraryService.listedValues(book, BookTotals(files: 9, available: 0, duration: 108))
        let listed = Dictionary(uniqueKeysWithValues: zip(LibraryService.listedFields, values))
        #expect(listed["state"] == .string("offline") && listed["missing"] == .uint32(0))
        // No files at all: a book of none.
        let empty = Dictionary(uniqueKeysWithValues: zip(LibraryService.listedFields, LibraryService.listedValues(book, nil)))
        #expect(empty["files"] == .uint32(0) && empty["duration"] == .int64(0))
    }

    /// The XML names the fields in the order of the struct.
    @Test func theDocumentNamesTheFieldsInTheirOrder() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let xml = try String(contentsOf: root.appendingPathComponent("dbus/org.lectern.Library1.xml"), encoding: .utf8)
        let start = try #require(xml.range(of: "in this order: "))
        let end = try #require(xml.range(of: "-->", range: start.upperBound..<xml.endIndex))
        let text = String(xml[start.upperBound..<end.lowerBound])
        // Each field is a word of the text, after the one before it.
        var rest = Substring(text)
        for field in LibraryService.listedFields {
            let word = try Regex("(^|[^a-z_])\(field)([^a-z_]|$)")
            let found = try #require(rest.firstMatch(of: word), "\(field) after the fields before it")
            rest = rest[found.range.upperBound...]
        }
        // Nothing but those: the names of the document, in order, are the struct's.
        let named = text.matches(of: try Regex("(^|, )([a-z_]+) \\(")).map { String($0.output[2].substring ?? "") }
        #expect(named.allSatisfy(LibraryService.listedFields.contains), "\(named)")
    }
}
