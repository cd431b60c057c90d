import Foundation
import LecternLibrary
import Testing
import TestSupport

@Suite("Pages of the whole library in every order, both ways (MPRIS Playlists)")
struct PageTests {
    static let titles = ["grape", "Banana", "apple", "Date", "cherry", "Fig", "elder"]

    /// Seven books imported in `titles` order; returns their ids in that order.
    static func make(_ library: Library) throws -> [Int64] {
        try titles.enumerated().map { index, title in
            try library.add(importedBook("/pages/\(index)", title: title, files: [
                track("/pages/\(index)/1.mp3", duration: Int64(index + 1) * 1_000_000),
                track("/pages/\(index)/2.mp3", duration: index == 0 ? nil : 500_000),
            ]))
        }
    }

    static func all(_ library: Library, _ order: BookSort, reversed: Bool) throws -> [Int64] {
        try library.books(sortedBy: order, reversed: reversed, offset: 0, limit: 1000).map(\.id!)
    }

    @Test("Every order, both directions, pages of every size add up to the whole list", arguments: BookSort.allCases)
    func paging(order: BookSort) throws {
        let t = try TestLibrary()
        let library = t.library
        _ = try Self.make(library)
        try library.markPlayed(try library.everyBook(in: nil, recursive: true)[2].id!, at: Date(timeIntervalSince1970: 1000))
        let count = try library.bookCount()
        #expect(count == 7)
        for reversed in [false, true] {
            let whole = try Self.all(library, order, reversed: reversed)
            #expect(whole.count == count)
            #expect(Set(whole).count == count)
            for limit in 1...(count + 1) {
                var pages: [Int64] = []
                var offset = 0
                while true {
                    let page = try library.books(sortedBy: order, reversed: reversed, offset: offset, limit: limit)
                    #expect(page.count <= limit)
                    if page.isEmpty { break }
                    pages += page.map(\.id!)
                    offset += limit
                }
                #expect(pages == whole, "limit \(limit)")
                #expect(offset == ((count + limit - 1) / limit) * limit)
            }
            #expect(try library.books(sortedBy: order, reversed: reversed, offset: count, limit: 5).isEmpty)
            #expect(try library.books(sortedBy: order, reversed: reversed, offset: 100, limit: 5).isEmpty)
            #expect(try library.books(sortedBy: order, reversed: reversed, offset: 0, limit: 0).isEmpty)
            #expect(try library.books(sortedBy: order, reversed: reversed, offset: -3, limit: 2).map(\.id!) == Array(whole.prefix(2)))
            #expect(try library.books(sortedBy: order, reversed: reversed, offset: 5, limit: 10).map(\.id!) == Array(whole.suffix(2)))
        }
        // Reversed is the exact reverse.
        #expect(try Self.all(library, order, reversed: true) == Self.all(library, order, reversed: false).reversed())
    }

    @Test("Title, added and user orders")
    func simpleOrders() throws {
        let t = try TestLibrary()
        let library = t.library
        let ids = try Self.make(library)
        let byTitle = zip(Self.titles, ids).sorted { $0.0.lowercased() < $1.0.lowercased() }.map(\.1)
        #expect(try Self.all(library, .title, reversed: false) == byTitle)
        #expect(try library.books(sortedBy: .title, reversed: false, offset: 0, limit: 3).map(\.title) == ["apple", "Banana", "cherry"])
        #expect(try Self.all(library, .added, reversed: false) == ids.reversed())  // the most recently added first
        #expect(try Self.all(library, .user, reversed: false) == ids)
        #expect(try Self.all(library, .user, reversed: true) == ids.reversed())
        // Renaming changes the alphabetical order only.
        try library.renameBook(ids[0], to: "Aardvark")
        #expect(try Self.all(library, .title, reversed: false).first == ids[0])
        #expect(try Self.all(library, .added, reversed: true) == ids)
    }

    @Test("Modified order follows the last change")
    func modifiedOrder() async throws {
        let t = try TestLibrary()
        let library = t.library
        let ids = try Self.make(library)
        try await Task.sleep(for: .milliseconds(10))
        for index in [4, 0, 2] {
            try library.renameBook(ids[index], to: "Renamed \(index)")
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try Self.all(library, .modified, reversed: false).prefix(3) == [ids[2], ids[0], ids[4]])  // the latest first
        #expect(Array(try Self.all(library, .modified, reversed: true).suffix(3)) == [ids[4], ids[0], ids[2]])
    }

    @Test("Played order: never-played books together, at one end, in both directions")
    func playedOrder() throws {
        let t = try TestLibrary()
        let library = t.library
        let ids = try Self.make(library)
        try library.markPlayed(ids[5], at: Date(timeIntervalSince1970: 2000))
        try library.markPlayed(ids[1], at: Date(timeIntervalSince1970: 1000))
        try library.markPlayed(ids[3], at: Date(timeIntervalSince1970: 3000))
        let never = [ids[0], ids[2], ids[4], ids[6]]
        let latestFirst = try Self.all(library, .played, reversed: false)
        #expect(latestFirst == [ids[3], ids[5], ids[1]] + never.reversed())
        let oldestFirst = try Self.all(library, .played, reversed: true)
        #expect(oldestFirst == never + [ids[1], ids[5], ids[3]])
        #expect(try library.books(sortedBy: .played, reversed: false, offset: 0, limit: 1).map(\.id) == [ids[3]])
        // Playing a book moves it to the "most recent" end.
        try library.markPlayed(ids[0], at: Date(timeIntervalSince1970: 4000))
        #expect(try Self.all(library, .played, reversed: false).first == ids[0])
        #expect(try Self.all(library, .played, reversed: true) == [ids[2], ids[4], ids[6], ids[1], ids[5], ids[3], ids[0]])
    }

    @Test("totals(of:)")
    func totals() throws {
        let t = try TestLibrary()
        let library = t.library
        let ids = try Self.make(library)
        let totals = try library.totals(of: [ids[0], ids[3], 9999])
        #expect(totals == [
            ids[0]: BookTotals(files: 2, available: 2, duration: 1_000_000),  // the unknown duration counts as 0
            ids[3]: BookTotals(files: 2, available: 2, duration: 4_500_000),
        ])
        #expect(try library.totals(of: []) == [:])
        #expect(try library.totals(of: ids).count == 7)
        // A gone file still counts, as unavailable.
        try library.add(importedBook("/pages/3", files: [track("/pages/3/1.mp3", duration: 4_000_000)]))
        #expect(try library.totals(of: [ids[3]])[ids[3]] == BookTotals(files: 2, available: 1, duration: 4_500_000))
    }
}
