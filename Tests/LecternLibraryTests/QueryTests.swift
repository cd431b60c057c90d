import Foundation
import LecternLibrary
import Testing
import TestSupport

/// Six books with varied tags; B5's second file is unavailable.
struct SmallLibrary {
    let t: TestLibrary
    var library: Library { t.library }
    let colour, mort, cotton, facts, symphony, guards: Int64
    /// B5's files: the available one and the unavailable one.
    let symphonyAvailable, symphonyGone: Int64

    init() throws {
        t = try TestLibrary()
        let library = t.library
        colour = try library.add(ImportedBook(sourcePath: "/b/colour", albumKey: "", title: "The Colour of Magic", author: "Terry Pratchett", coverPath: nil, files: [
            track("/b/colour/1.mp3", artist: "Nigel Planer", album: "The Colour of Magic", genre: "Fantasy"),
            track("/b/colour/2.mp3", artist: "Nigel Planer", album: "The Colour of Magic", genre: "Fantasy"),
        ]))
        mort = try library.add(ImportedBook(sourcePath: "/b/mort", albumKey: "", title: "Mort", author: "Terry Pratchett", coverPath: nil, files: [
            track("/b/mort/1.mp3", artist: "Tony Robinson", album: "Mort", albumArtist: "Terry Pratchett", composer: "Dave Greenslade", genre: "Fantasy"),
        ]))
        cotton = try library.add(ImportedBook(sourcePath: "/b/cotton", albumKey: "", title: "100% Cotton", author: "Ann_Smith", coverPath: nil, files: [
            track("/b/cotton/1.mp3", album: "100% Cotton", genre: "Non-Fiction"),
        ]))
        facts = try library.add(ImportedBook(sourcePath: "/b/facts", albumKey: "", title: "1000 Cotton Facts", author: "AnnaSmith", coverPath: nil, files: [
            track("/b/facts/1.mp3", album: "Cotton Facts \\ Part 1", composer: "Philip Glass", genre: "Non-Fiction"),
        ]))
        let symphonyBook = ImportedBook(sourcePath: "/b/symphony", albumKey: "", title: "Symphony Stories", author: nil, coverPath: nil, files: [
            track("/b/symphony/1.mp3", artist: "Narrator Jones", album: "Symphony Stories Vol. 1", albumArtist: "Orchestra of Lectern",
                  composer: "Ludwig van Beethoven", genre: "Classical"),
            track("/b/symphony/2.mp3", album: "Symphony Stories Vol. 2", composer: "Wolfgang Amadeus Mozart", genre: "Classical"),
        ])
        symphony = try library.add(symphonyBook)
        var without = symphonyBook
        without.files.removeLast()
        try library.add(without)  // 2.mp3 is gone now
        let symphonyFiles = try library.files(of: symphony)
        symphonyAvailable = symphonyFiles[0].id!
        symphonyGone = symphonyFiles[1].id!
        guards = try library.add(ImportedBook(sourcePath: "/b/guards", albumKey: "", title: "Guards! Guards!", author: nil, coverPath: nil, files: [
            track("/b/guards/1.mp3", artist: "Terry Pratchett", album: "Guards! Guards!", composer: "Dave Greenslade", genre: "Fantasy"),
        ]))
    }

    func find(_ query: LibraryQuery) throws -> [Int64] {
        try library.everyMatch(query).map(\.id!)
    }
}

@Suite("Queries")
struct QueryTests {
    @Test("Each predicate alone, case-insensitively")
    func singlePredicates() throws {
        let s = try SmallLibrary()
        #expect(try s.library.files(of: s.symphony).map(\.available) == [true, false])
        // Everything, by title (case-insensitively).
        #expect(try s.find(LibraryQuery()) == [s.cotton, s.facts, s.guards, s.mort, s.symphony, s.colour])
        // title
        #expect(try s.find(LibraryQuery(title: "cotton")) == [s.cotton, s.facts])
        #expect(try s.find(LibraryQuery(title: "MORT")) == [s.mort])
        #expect(try s.find(LibraryQuery(title: "of mAGIC")) == [s.colour])
        #expect(try s.find(LibraryQuery(title: "nothing like this")) == [])
        // author: the book's author, or a file's artist or album artist
        #expect(try s.find(LibraryQuery(author: "pratchett")) == [s.guards, s.mort, s.colour])
        #expect(try s.find(LibraryQuery(author: "NIGEL")) == [s.colour])
        #expect(try s.find(LibraryQuery(author: "orchestra")) == [s.symphony])
        #expect(try s.find(LibraryQuery(author: "narrator jones")) == [s.symphony])
        // album, composer, genre: of any file
        #expect(try s.find(LibraryQuery(album: "symphony")) == [s.symphony])
        #expect(try s.find(LibraryQuery(album: "VOL. 2")) == [s.symphony])
        #expect(try s.find(LibraryQuery(album: "magic")) == [s.colour])
        #expect(try s.find(LibraryQuery(composer: "greenslade")) == [s.guards, s.mort])
        #expect(try s.find(LibraryQuery(composer: "MOZART")) == [s.symphony])
        #expect(try s.find(LibraryQuery(genre: "fantasy")) == [s.guards, s.mort, s.colour])
        #expect(try s.find(LibraryQuery(genre: "non-fiction")) == [s.cotton, s.facts])
        #expect(try s.find(LibraryQuery(genre: "Classical")) == [s.symphony])
        #expect(try s.find(LibraryQuery(genre: "")) == [s.cotton, s.facts, s.guards, s.mort, s.symphony, s.colour])
    }

    @Test("% _ and \\ in the search text are matched literally")
    func wildcardsAreLiteral() throws {
        let s = try SmallLibrary()
        #expect(try s.find(LibraryQuery(title: "%")) == [s.cotton])
        #expect(try s.find(LibraryQuery(title: "100%")) == [s.cotton])  // as a wildcard: "1000 Cotton Facts" too
        #expect(try s.find(LibraryQuery(title: "0% c")) == [s.cotton])
        #expect(try s.find(LibraryQuery(title: "100% Cotton")) == [s.cotton])
        #expect(try s.find(LibraryQuery(title: "_")) == [])  // as a wildcard: everything
        #expect(try s.find(LibraryQuery(title: "M_rt")) == [])
        #expect(try s.find(LibraryQuery(author: "ann_smith")) == [s.cotton])  // as a wildcard: AnnaSmith too
        #expect(try s.find(LibraryQuery(author: "_")) == [s.cotton])
        #expect(try s.find(LibraryQuery(album: "%")) == [s.cotton])
        #expect(try s.find(LibraryQuery(album: "\\")) == [s.facts])
        #expect(try s.find(LibraryQuery(album: "facts \\ part")) == [s.facts])
        #expect(try s.find(LibraryQuery(album: "\\%")) == [])
        #expect(try s.find(LibraryQuery(genre: "%")) == [])
        #expect(try s.find(LibraryQuery(composer: "_")) == [])
    }

    @Test("Predicates combine with AND")
    func combined() throws {
        let s = try SmallLibrary()
        #expect(try s.find(LibraryQuery(author: "pratchett", genre: "fantasy")) == [s.guards, s.mort, s.colour])
        #expect(try s.find(LibraryQuery(author: "pratchett", composer: "greenslade", genre: "FANTASY")) == [s.guards, s.mort])
        #expect(try s.find(LibraryQuery(title: "mort", author: "pratchett")) == [s.mort])
        #expect(try s.find(LibraryQuery(title: "cotton", genre: "fantasy")) == [])
        #expect(try s.find(LibraryQuery(title: "cotton", author: "anna")) == [s.facts])
        #expect(try s.find(LibraryQuery(title: "cotton", author: "ann", album: "100%", composer: nil, genre: "fiction")) == [s.cotton])
        #expect(try s.find(LibraryQuery(title: "s", author: "o", album: "s", composer: "e", genre: "c")) == [s.symphony])
    }

    @Test("Non-ASCII text is matched case-insensitively too")
    func nonASCIICase() throws {
        let library = try Library()
        let id = try library.add(importedBook("/e", title: "Émile et les Œuvres", author: "Ödön von Horváth"))
        let street = try library.add(importedBook("/s", title: "STRASSE DER BESTEN", author: "Max Straße"))
        let sigma = try library.add(importedBook("/g", title: "ΟΔΥΣΣΕΥΣ", author: "Ὅμηρος"))
        #expect(try library.everyMatch(LibraryQuery(title: "Émile")).map(\.id) == [id])
        #expect(try library.everyMatch(LibraryQuery(title: "émile")).map(\.id) == [id])
        #expect(try library.everyMatch(LibraryQuery(title: "ÉMILE ET LES ŒUVRES")).map(\.id) == [id])
        #expect(try library.everyMatch(LibraryQuery(title: "œuvres")).map(\.id) == [id])
        #expect(try library.everyMatch(LibraryQuery(author: "ÖDÖN")).map(\.id) == [id])
        #expect(try library.everyMatch(LibraryQuery(author: "horváth")).map(\.id) == [id])
        // A decomposed accent (e + U+0301) is the same letter as the composed one.
        #expect(try library.everyMatch(LibraryQuery(title: "e\u{301}mile")).map(\.id) == [id])
        // Accents still count: "emile" is another word.
        #expect(try library.everyMatch(LibraryQuery(title: "emile")).map(\.id) == [])
        // ß folds to ss, both ways, and the capital ẞ too.
        #expect(try library.everyMatch(LibraryQuery(title: "straße")).map(\.id) == [street])
        #expect(try library.everyMatch(LibraryQuery(author: "STRASSE")).map(\.id) == [street])
        #expect(try library.everyMatch(LibraryQuery(author: "STRAẞE")).map(\.id) == [street])
        // Final sigma: "οδυσσευς" (ς at the end) finds the capitals.
        #expect(try library.everyMatch(LibraryQuery(title: "οδυσσευς")).map(\.id) == [sigma])
        #expect(try library.randomBook(LibraryQuery(title: "émile"))?.book.id == id)
        #expect(try library.group(LibraryQuery(author: "straße"), by: .title).map(\.value) == ["STRASSE DER BESTEN"])
    }

    @Test("group(by:) each property, with counts of books")
    func group() throws {
        let s = try SmallLibrary()
        func group(_ query: LibraryQuery = LibraryQuery(), by property: LibraryQuery.Property) throws -> [String] {
            try s.library.group(query, by: property).map { "\($0.value)=\($0.books)" }
        }
        #expect(try group(by: .title) == ["100% Cotton=1", "1000 Cotton Facts=1", "Guards! Guards!=1", "Mort=1",
                                          "Symphony Stories=1", "The Colour of Magic=1"])
        // Books without an author of their own count under their first file's album artist or artist.
        #expect(try group(by: .author) == ["Ann_Smith=1", "AnnaSmith=1", "Orchestra of Lectern=1", "Terry Pratchett=3"])
        // Two files of The Colour of Magic share the album: one book.
        #expect(try group(by: .album) == ["100% Cotton=1", "Cotton Facts \\ Part 1=1", "Guards! Guards!=1", "Mort=1",
                                          "Symphony Stories Vol. 1=1", "Symphony Stories Vol. 2=1", "The Colour of Magic=1"])
        #expect(try group(by: .composer) == ["Dave Greenslade=2", "Ludwig van Beethoven=1", "Philip Glass=1", "Wolfgang Amadeus Mozart=1"])
        #expect(try group(by: .genre) == ["Classical=1", "Fantasy=3", "Non-Fiction=2"])
        // With a query.
        #expect(try group(LibraryQuery(author: "pratchett"), by: .genre) == ["Fantasy=3"])
        #expect(try group(LibraryQuery(genre: "fantasy"), by: .composer) == ["Dave Greenslade=2"])
        #expect(try group(LibraryQuery(genre: "fantasy"), by: .author) == ["Terry Pratchett=3"])
        #expect(try group(LibraryQuery(title: "cotton"), by: .genre) == ["Non-Fiction=2"])
        #expect(try group(LibraryQuery(title: "%"), by: .title) == ["100% Cotton=1"])
        #expect(try group(LibraryQuery(title: "nothing"), by: .genre) == [])
        // The counts add up to what find returns.
        for genre in try s.library.group(LibraryQuery(), by: .genre) {
            #expect(try s.find(LibraryQuery(genre: genre.value)).count == genre.books)
        }
    }

    @Test("group(by: .author) agrees with find(author:)")
    func groupAuthorAgreesWithFind() throws {
        let s = try SmallLibrary()
        let counts = Dictionary(uniqueKeysWithValues: try s.library.group(LibraryQuery(), by: .author).map { ($0.value, $0.books) })
        // Guards! Guards! has no author of its own: it counts under its file's artist, by which find matches it.
        #expect(counts["Terry Pratchett"] == (try s.find(LibraryQuery(author: "Terry Pratchett")).count))
        #expect(counts["Terry Pratchett"] == 3)
    }

    @Test("randomBook returns only matches, nil when nothing matches")
    func randomBook() throws {
        let s = try SmallLibrary()
        var seen: Set<Int64> = []
        for _ in 0..<50 {
            let (book, totals) = try #require(try s.library.randomBook(LibraryQuery(author: "pratchett")))
            #expect([s.colour, s.mort, s.guards].contains(book.id!))
            #expect(totals == (try s.library.totals(of: [book.id!])[book.id!]), "its totals, read with it")
            seen.insert(book.id!)
        }
        #expect(seen == [s.colour, s.mort, s.guards])  // all three in 50 draws: p(miss) < 1e-8
        for _ in 0..<50 {
            #expect(try s.library.randomBook(LibraryQuery(title: "100%"))?.book.id == s.cotton)
            #expect(try s.library.randomBook(LibraryQuery(title: "cotton", genre: "fantasy")) == nil)
        }
        #expect(try s.library.randomBook(LibraryQuery(title: "_")) == nil)
        #expect(try Library().randomBook(LibraryQuery()) == nil)
    }

    @Test("randomFile returns only available files of matching books, nil when nothing matches")
    func randomFile() throws {
        let s = try SmallLibrary()
        let colourFiles = Set(try s.library.fileIds(of: s.colour))
        var seen: Set<Int64> = []
        for _ in 0..<50 {
            let file = try #require(try s.library.randomFile(LibraryQuery(genre: "classical")))
            #expect(file.id == s.symphonyAvailable)
            #expect(file.available)
            let colour = try #require(try s.library.randomFile(LibraryQuery(title: "magic")))
            #expect(colourFiles.contains(colour.id!))
            seen.insert(colour.id!)
            let any = try #require(try s.library.randomFile(LibraryQuery()))
            #expect(any.id != s.symphonyGone)
            #expect(any.available)
            #expect(try s.library.randomFile(LibraryQuery(author: "nobody at all")) == nil)
        }
        #expect(seen == colourFiles)
        #expect(try Library().randomFile(LibraryQuery()) == nil)
    }
}
