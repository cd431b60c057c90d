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
        let shared = try #require(try library.find(LibraryQuery(title: "Shared")).first)
        #expect(try library.files(of: shared.id!).map(\.position) == [0, 1, 2])
        #expect(try library.totals(of: all + [shared.id!]).values.allSatisfy { $0 == BookTotals(files: 3, available: 3, duration: 3_000_000) })
        #expect(Set(try library.books(ordered: .user, reversed: false, offset: 0, limit: 100).map(\.userOrder)).count == 41)
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
                    _ = try library.books(ordered: .alphabetical, reversed: false, offset: 0, limit: 1000)
                    _ = try library.find(LibraryQuery(title: "W"))
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

    @Test("A snapshot reads the library as it was when it was taken")
    func snapshotIsolation() throws {
        let t = try TestLibrary()
        let first = try t.library.add(importedBook("/one", title: "One"))
        let snapshot = try t.library.snapshot()
        try t.library.renameBook(first, to: "Renamed")
        let second = try t.library.add(importedBook("/two", title: "Two"))
        #expect(try snapshot.books(in: nil, recursive: true).map(\.title) == ["One"])
        #expect(try snapshot.find(LibraryQuery(title: "two")).isEmpty)
        #expect(try snapshot.totals(of: [first, second]).keys.sorted() == [first])
        #expect(try t.library.books(in: nil, recursive: true).map(\.title) == ["Renamed", "Two"])
        expectError(.unavailable) { try snapshot.createShelf(named: "Never", in: nil) }
    }
}
