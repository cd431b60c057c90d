import Foundation
import GRDB
import LecternLibrary
import Testing
import TestSupport

@Suite("Series: named by an import or by hand, listed and searched in series order")
struct SeriesTests {
    /// A book of one file imported from `folder`, in `series` at `part`.
    static func add(_ library: Library, _ title: String, series: String?, part: String?) throws -> Int64 {
        var book = importedBook("/series/\(title)", title: title, paths: ["1.mp3"])
        (book.series, book.seriesPart) = (series, part)
        return try library.add(book)
    }

    @Test func booksComeInTheOrderOfTheirPartsAsNumbers() throws {
        let t = try TestLibrary()
        let library = t.library
        let ten = try Self.add(library, "Ten", series: "Discworld", part: "10")
        let two = try Self.add(library, "Two", series: "discworld", part: "2")
        let half = try Self.add(library, "Two and a half", series: "Discworld", part: "2.5")
        let none = try Self.add(library, "Alone", series: nil, part: nil)
        let other = try Self.add(library, "Dune", series: "Dune Chronicles", part: "1")
        let unnumbered = try Self.add(library, "Extra", series: "Discworld", part: nil)

        let inOrder = try library.books(in: nil, recursive: true, sortedBy: .series, offset: 0, limit: 100).books.map(\.id)
        #expect(inOrder == [two, half, ten, unnumbered, other, none])
        let discworld = try library.books(in: nil, recursive: true, matching: LibraryQuery(series: "DISCWORLD"), sortedBy: .series,
                                          offset: 0, limit: 100)
        #expect(discworld.books.map(\.id) == [two, half, ten, unnumbered] && discworld.total == 4)
        #expect(try library.allSeries().map { "\($0.name) \($0.books)" } == ["Discworld 4", "Dune Chronicles 1"])
        // The series is searched with the shelves.
        #expect(try library.search("chronicles", offset: 0, limit: 10).books.map(\.id) == [other])
        #expect(try library.nextInSeries(after: two) == half)
        try library.setFinished(half, true)
        #expect(try library.nextInSeries(after: two) == ten, "a finished book is passed over")
        #expect(try library.nextInSeries(after: ten) == unnumbered)
        #expect(try library.nextInSeries(after: unnumbered) == nil)
        #expect(try library.nextInSeries(after: none) == nil)
    }

    @Test func aSeriesSetByHandIsKeptByTheNextImportAndBadOnesAreRefused() throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try Self.add(library, "Mort", series: nil, part: nil)
        try library.setSeries(of: id, "  Discworld ", part: " 4 ")
        #expect(try library.book(id).series == "Discworld" && library.book(id).seriesPart == "4")
        // Imported again with tags that say otherwise: what the listener set stays.
        _ = try Self.add(library, "Mort", series: "Death", part: "1")
        #expect(try library.book(id).series == "Discworld" && library.book(id).seriesPart == "4")
        #expect(try library.search("discworld", offset: 0, limit: 10).books.map(\.id) == [id])

        expectError(.invalidArgument) { try library.setSeries(of: id, "", part: "3") }
        expectError(.invalidArgument) { try library.setSeries(of: id, "Discworld", part: String(repeating: "9", count: 33)) }
        expectError(.notFound) { try library.setSeries(of: 999, "Discworld", part: nil) }
        #expect(try library.book(id).series == "Discworld" && library.book(id).seriesPart == "4")
        try library.setSeries(of: id, nil, part: nil)
        #expect(try library.book(id).series == nil && library.book(id).seriesPart == nil)
        #expect(try library.search("discworld", offset: 0, limit: 10).books.isEmpty)
        // A book with none takes the next import's.
        _ = try Self.add(library, "Mort", series: "Death", part: "1")
        #expect(try library.book(id).series == "Death" && library.book(id).seriesPart == "1")
    }

    @Test("A library of v19 gets v20: its files are read again for their series tags, its search rows still found")
    func v20FromV19() throws {
        let (dir, path, queue) = try MigrationTests.library(migratedUpTo: "v19: a stop's place kept")
        defer { dir.remove() }
        try queue.write { db in
            try db.execute(sql: "INSERT INTO book(title, addedAt, modifiedAt) VALUES ('Mort', '2024-01-02 03:04:05.000', '2024-01-02 03:04:05.000')")
            try db.execute(sql: "INSERT INTO bookFile(bookId, path, position, size, modified, fingerprint) VALUES (1, '/old/1.mp3', 0, 10, 20, '2:10:f')")
        }
        try queue.close()
        let library = try Library(path: path)
        #expect(try library.unchangedFiles([("/old/1.mp3", FileFingerprint(size: 10, modified: 20, value: "2:10:f"))]).isEmpty)
        #expect(try library.search("mort", offset: 0, limit: 10).books.map(\.id) == [1])
        try library.setSeries(of: 1, "Discworld", part: "4")
        #expect(try library.search("discworld", offset: 0, limit: 10).books.map(\.id) == [1])
    }
}
