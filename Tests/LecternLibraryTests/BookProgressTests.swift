import Foundation
import GRDB
@testable import LecternLibrary
import Testing
import TestSupport

/// Five books of three 1 s files each, by one author, each as far through as its title says: `fresh` never played,
/// `started` with its place half-way through its first file, `opened` made current but never heard (its place at the
/// very start), `done` marked finished, `reopened` played to its last second, marked finished, then not finished.
struct ProgressLibrary {
    let t: TestLibrary
    var library: Library { t.library }
    let fresh, started, opened, done, reopened: Int64

    init() throws {
        t = try TestLibrary()
        let library = t.library
        func book(_ title: String) throws -> Int64 {
            try library.add(importedBook("/b/" + title, title: title, author: "Common Writer"))
        }
        (fresh, started, opened, done, reopened) = (try book("Alpha Fresh"), try book("Bravo Started"), try book("Charlie Opened"),
                                                    try book("Delta Done"), try book("Echo Reopened"))
        try library.savePosition(of: started, file: try library.fileIds(of: started)[0], offset: 500_000)
        try library.savePosition(of: opened, file: try library.fileIds(of: opened)[0], offset: 0)
        try library.setFinished(done, true)
        try library.savePosition(of: reopened, file: try library.fileIds(of: reopened)[2], offset: 1_000_000)
        try library.setFinished(reopened, true)
        try library.setFinished(reopened, false)
    }

    /// The titles of the listing of `shelf` that match `query`, in `order`; the page holds them all.
    func listed(_ query: LibraryQuery, in shelf: Int64? = nil, recursive: Bool = true, order: BookSort = .title) throws -> [String] {
        let page = try library.books(in: shelf, recursive: recursive, matching: query, sortedBy: order, offset: 0, limit: 200)
        #expect(page.total == page.books.count)
        return page.books.map(\.title)
    }

    /// The titles of a search of `text` among the books of `progress`, ranking by bm25 at most `rankingAtMost` matches.
    func searched(_ text: String, _ progress: LibraryQuery.Progress, rankingAtMost: Int = Library.rankedMatches) throws -> [String] {
        let page = try library.search(text, LibraryQuery(progress: progress), offset: 0, limit: 200, rankingAtMost: rankingAtMost)
        #expect(page.total == page.books.count)
        return page.books.map(\.title)
    }
}

@Suite("Progress: listing, finding and moving books by how far through they are")
struct BookProgressTests {
    @Test("Listings keep the books of a progress, on a shelf and with other keys, each page counted")
    func listings() throws {
        let p = try ProgressLibrary()
        #expect(try p.listed(LibraryQuery(progress: .notStarted)) == ["Alpha Fresh", "Charlie Opened"])
        #expect(try p.listed(LibraryQuery(progress: .inProgress)) == ["Bravo Started", "Echo Reopened"])
        #expect(try p.listed(LibraryQuery(progress: .finished)) == ["Delta Done"])
        #expect(try p.listed(LibraryQuery(progress: .unfinished)) == ["Alpha Fresh", "Bravo Started", "Charlie Opened", "Echo Reopened"])
        #expect(try p.listed(LibraryQuery()).count == 5)
        // In another order, with another key.
        #expect(try p.listed(LibraryQuery(progress: .unfinished), order: .progress)
                == ["Echo Reopened", "Bravo Started", "Charlie Opened", "Alpha Fresh"])
        #expect(try p.listed(LibraryQuery(title: "reop", author: "common", progress: .inProgress)) == ["Echo Reopened"])
        // A page of them, and how many there are on every page.
        let page = try p.library.books(in: nil, recursive: true, matching: LibraryQuery(progress: .unfinished), sortedBy: .title,
                                       offset: 1, limit: 2)
        #expect(page.books.map(\.title) == ["Bravo Started", "Charlie Opened"])
        #expect(page.total == 4)
        // On a shelf, below it, at the top level.
        let shelf = try #require(try p.library.createShelf(named: "Shelf", in: nil).id)
        let below = try #require(try p.library.createShelf(named: "Below", in: shelf).id)
        try p.library.moveBook(p.started, to: shelf)
        try p.library.moveBook(p.reopened, to: below)
        #expect(try p.listed(LibraryQuery(progress: .inProgress), in: shelf, recursive: false) == ["Bravo Started"])
        #expect(try p.listed(LibraryQuery(progress: .inProgress), in: shelf) == ["Bravo Started", "Echo Reopened"])
        #expect(try p.listed(LibraryQuery(progress: .finished), in: shelf) == [])
        #expect(try p.listed(LibraryQuery(progress: .unfinished), in: nil, recursive: false) == ["Alpha Fresh", "Charlie Opened"])
    }

    @Test("Find, a search, Group and Random keep the books of a progress, as their progress changes")
    func searches() throws {
        let p = try ProgressLibrary()
        #expect(try p.library.everyMatch(LibraryQuery(progress: .finished)).map(\.title) == ["Delta Done"])
        #expect(try p.searched("common", .inProgress) == ["Bravo Started", "Echo Reopened"])
        #expect(try p.searched("common", .inProgress, rankingAtMost: 1) == ["Bravo Started", "Echo Reopened"], "ranked by tiers")
        #expect(try p.searched("common", .finished) == ["Delta Done"])
        #expect(try p.searched("alpha", .notStarted) == ["Alpha Fresh"])
        #expect(try p.searched("alpha", .finished) == [])
        // Finishing a book changes no word of it: the ranking kept for the words serves, the progress is read again.
        try p.library.setFinished(p.started, true)
        #expect(try p.searched("common", .inProgress) == ["Echo Reopened"])
        #expect(try p.searched("common", .finished) == ["Bravo Started", "Delta Done"])
        #expect(try p.searched("common", .finished, rankingAtMost: 1) == ["Bravo Started", "Delta Done"], "ranked by tiers")
        try p.library.savePosition(of: p.fresh, file: try p.library.fileIds(of: p.fresh)[1], offset: 0)
        #expect(try p.searched("common", .notStarted) == ["Charlie Opened"])
        #expect(try p.library.group(LibraryQuery(progress: .finished), by: .title).map(\.value) == ["Bravo Started", "Delta Done"])
        #expect(try p.library.group(LibraryQuery(progress: .inProgress), by: .author).map { "\($0.value)=\($0.books)" }
                == ["Common Writer=2"])
        for _ in 0..<10 {
            #expect(try p.library.randomBook(LibraryQuery(progress: .notStarted))?.book.title == "Charlie Opened")
        }
    }

    @Test("The books of a progress move to a shelf at once; their places, bookmarks and settings stay")
    func bulkMove() throws {
        let p = try ProgressLibrary()
        let library = p.library
        let done = try #require(try library.createShelf(named: "Done", in: nil).id)
        try library.setFinished(p.started, true)
        _ = try library.addBookmark(to: p.started, file: try library.fileIds(of: p.started)[0], offset: 250_000, title: "Kept")
        let before = try Snapshot(library)

        #expect(try library.moveBooks(in: nil, recursive: true, matching: LibraryQuery(progress: .finished), to: done)
                == [p.started, p.done])
        #expect(try library.everyBook(in: done, recursive: false).map(\.title) == ["Bravo Started", "Delta Done"])
        let after = try Snapshot(library)
        // Only their shelves (and when they changed) are not what they were.
        func unshelved(_ snapshot: Snapshot) -> Snapshot {
            var snapshot = snapshot
            for i in snapshot.books.indices {
                (snapshot.books[i].shelfId, snapshot.books[i].modifiedAt) = (nil, Date(timeIntervalSince1970: 0))
            }
            return snapshot
        }
        #expect(unshelved(after) == unshelved(before))
        #expect(try library.bookmarks(of: p.started).map(\.title) == ["Kept"])
        #expect(try library.book(p.started).positionOffset == 500_000)

        // Already there: none moved.
        #expect(try library.moveBooks(in: nil, recursive: true, matching: LibraryQuery(progress: .finished), to: done) == [])
        // From one shelf only; to the top level.
        let reading = try #require(try library.createShelf(named: "Reading", in: nil).id)
        #expect(try library.moveBooks(in: nil, recursive: false, matching: LibraryQuery(progress: .inProgress), to: reading) == [p.reopened])
        #expect(try library.moveBooks(in: done, recursive: false, matching: LibraryQuery(title: "delta", progress: .finished), to: nil)
                == [p.done])
        #expect(try library.book(p.done).shelfId == nil)
        #expect(try library.everyBook(in: nil, recursive: false).map(\.title) == ["Alpha Fresh", "Charlie Opened", "Delta Done"])
    }

    @Test("A bulk move to or from a shelf that does not exist moves nothing")
    func bulkMoveToNowhere() throws {
        let p = try ProgressLibrary()
        let shelf = try #require(try p.library.createShelf(named: "Shelf", in: nil).id)
        let before = try Snapshot(p.library)
        expectError(.notFound) { try p.library.moveBooks(in: nil, recursive: true, matching: LibraryQuery(progress: .unfinished), to: 9_999) }
        expectError(.notFound) { try p.library.moveBooks(in: 9_999, recursive: true, matching: LibraryQuery(), to: shelf) }
        #expect(try Snapshot(p.library) == before)
    }

    @Test("A bulk move that fails at one book leaves every book where it was")
    func bulkMoveIsOneTransaction() throws {
        let t = try TestLibrary()
        let first = try t.library.add(importedBook("/b/first", title: "First"))
        let refused = try t.library.add(importedBook("/b/refused", title: "Refused"))
        let shelf = try #require(try t.library.createShelf(named: "Done", in: nil).id)
        for book in [first, refused] { try t.library.setFinished(book, true) }
        try t.library.close()
        // Moving the book titled "Refused" fails: the other one is not moved either.
        let raw = try DatabaseQueue(path: t.path)
        try raw.write { db in
            try db.execute(sql: """
                CREATE TRIGGER refuseMove BEFORE UPDATE OF shelfId ON book WHEN NEW.title = 'Refused'
                BEGIN SELECT RAISE(ABORT, 'refused'); END;
                """)
        }
        try raw.close()
        let library = try Library(path: t.path)
        let before = try Snapshot(library)
        #expect(throws: (any Error).self) {
            try library.moveBooks(in: nil, recursive: true, matching: LibraryQuery(progress: .finished), to: shelf)
        }
        #expect(try Snapshot(library) == before)
        #expect(try library.everyBook(in: shelf, recursive: false).isEmpty)
    }
}
