import Foundation
import LecternLibrary
import Testing
import TestSupport

@Suite("Concurrency")
struct ConcurrencyTests {
    /// What one worker did: its books and the last position it saved in each.
    struct WorkerResult: Sendable {
        var books: [Int64] = []
        var positions: [Int64: (file: Int64, offset: Int64)] = [:]
        var sharedCreated = 0
        var changed = 0
    }

    static let shared = importedBook("/shared", title: "Shared", paths: ["1.mp3", "2.mp3", "3.mp3"])

    /// 50 operations: 10 imports of its own, 10 re-imports of a shared book, 30 saved positions.
    static func work(_ library: Library, worker: Int) throws -> WorkerResult {
        var result = WorkerResult()
        for op in 0..<50 {
            switch op % 5 {
            case 0:
                let id = try library.add(importedBook("/worker\(worker)/\(op / 5)", title: "W\(worker) B\(op / 5)"))
                result.books.append(id)
            case 1:
                if try library.importBook(shared, into: nil).created { result.sharedCreated += 1 }
            default:
                let book = result.books[(op * 7) % result.books.count]
                let files = try library.fileIds(of: book)
                let file = files[op % files.count]
                let offset = Int64(op * 1000 + worker)
                if try library.savePosition(of: book, file: file, offset: offset) { result.changed += 1 }
                result.positions[book] = (file, offset)
            }
        }
        return result
    }

    static func check(_ library: Library, _ results: [WorkerResult]) throws {
        #expect(results.count == 4)
        #expect(try library.bookCount() == 41)
        #expect(results.map(\.sharedCreated).reduce(0, +) == 1)
        #expect(results.allSatisfy { $0.changed == 30 })  // every saved position differs from the last one
        let all = results.flatMap(\.books)
        #expect(Set(all).count == 40)
        for result in results {
            for (book, position) in result.positions {
                let stored = try library.book(book)
                #expect(stored.positionFileId == position.file)
                #expect(stored.positionOffset == position.offset)
            }
        }
        let shared = try #require(try library.everyMatch(LibraryQuery(title: "Shared")).first)
        #expect(try library.files(of: shared.id!).map(\.position) == [0, 1, 2])
        #expect(try library.totals(of: all + [shared.id!]).values.allSatisfy { $0 == BookTotals(files: 3, available: 3, duration: 3_000_000) })
        #expect(Set(try library.books(sortedBy: .user, reversed: false, offset: 0, limit: 100).map(\.userOrder)).count == 41)
        #expect(try library.integrityCheck() == "ok")
    }

    @Test("4 tasks importing and saving positions on one library: no error, consistent counts")
    func oneLibrary() async throws {
        let t = try TestLibrary()
        let library = t.library
        let results = try await withThrowingTaskGroup(of: WorkerResult.self) { group in
            for worker in 0..<4 {
                group.addTask { try Self.work(library, worker: worker) }
            }
            // A reader at the same time.
            group.addTask {
                for _ in 0..<100 {
                    let count = try library.bookCount()
                    #expect(count <= 41)
                    _ = try library.books(sortedBy: .title, reversed: false, offset: 0, limit: 1000)
                    _ = try library.everyMatch(LibraryQuery(title: "W"))
                }
                return WorkerResult()
            }
            var results: [WorkerResult] = []
            for try await result in group where !result.books.isEmpty || result.sharedCreated > 0 || result.changed > 0 {
                results.append(result)
            }
            return results
        }
        try Self.check(library, results)
    }

    @Test("4 tasks on two Library instances of the same file (like two processes)")
    func twoLibraries() async throws {
        let t = try TestLibrary()
        let second = try Library(path: t.path)
        let libraries = [t.library, second]
        let results = try await withThrowingTaskGroup(of: WorkerResult.self) { group in
            for worker in 0..<4 {
                let library = libraries[worker % 2]
                group.addTask { try Self.work(library, worker: worker) }
            }
            var results: [WorkerResult] = []
            for try await result in group { results.append(result) }
            return results
        }
        try Self.check(t.library, results)
        try Self.check(second, results)
    }

    @Test("Reads reuse the pool's reader connections and see every write made since their last read")
    func readersSeeLaterWrites() throws {
        let t = try TestLibrary()
        let library = t.library
        let first = try library.add(importedBook("/one", title: "One"))
        func page() throws -> BookPage { try library.books(in: nil, recursive: true, sortedBy: .title, offset: 0, limit: 10) }
        #expect(try page().books.map(\.title) == ["One"])
        #expect(try library.search("one", offset: 0, limit: 10).books.map(\.id) == [first])
        try library.renameBook(first, to: "Renamed")
        let second = try library.add(importedBook("/two", title: "Two", paths: ["1.mp3", "2.mp3"]))
        let now = try page()
        #expect(now.books.map(\.title) == ["Renamed", "Two"])
        #expect(now.total == 2)
        #expect(now.totals[first]?.files == 3 && now.totals[second]?.files == 2)
        #expect(try library.search("one", offset: 0, limit: 10).books.isEmpty)
        #expect(try library.search("renamed", offset: 0, limit: 10).books.map(\.id) == [first])
        try library.deleteBook(first)
        #expect(try page().books.map(\.id) == [second])
        #expect(try library.group(LibraryQuery(), by: .title).map(\.value) == ["Two"])
    }

    @Test("A page's books, their totals and its count are read at one moment while another task adds and deletes books")
    func pagesAreConsistentWhileWritten() async throws {
        let t = try TestLibrary()
        let library = t.library
        let kept = try (0..<5).map { try library.add(importedBook("/kept/\($0)", title: "Kept \($0)")) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for round in 0..<40 {
                    let id = try library.add(importedBook("/passing/\(round)", title: "Passing \(round)"))
                    try library.deleteBook(id)
                }
            }
            group.addTask {
                for _ in 0..<200 {
                    let page = try library.books(in: nil, recursive: true, sortedBy: .added, offset: 0, limit: 3)
                    #expect(page.books.count == 3)
                    // Every book listed has its three files counted, a passing one too: read in the same transaction.
                    #expect(page.books.allSatisfy { page.totals[$0.id!] == BookTotals(files: 3, available: 3, duration: 3_000_000) })
                    #expect((5...6).contains(page.total))
                    let all = try library.books(in: nil, recursive: true, sortedBy: .title, offset: 0, limit: 200)
                    #expect(all.total == all.books.count && Set(kept).isSubset(of: all.books.map(\.id!)))
                }
            }
            try await group.waitForAll()
        }
    }

    @Test("An async read runs on a reader thread, not its caller's, sees the writes made before it and throws its errors")
    func readingOnAReaderThread() async throws {
        let t = try TestLibrary()
        let library = t.library
        let id = try library.add(importedBook("/one", title: "One"))
        let (title, thread) = try await library.reading { library in (try library.book(id).title, Thread.current.name) }
        #expect(title == "One")
        #expect(thread == "lectern-read")
        await #expect(throws: LibraryError.self) { try await library.reading { try $0.book(id + 1) } }
    }
}
