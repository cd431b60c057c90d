import Testing
@testable import LecternBooks

/// A book's series from the common "Series/01 - Title" layout, when its tags name none.
@Suite struct SeriesFolderTests {
    @Test(arguments: [
        ("01 - The Colour of Magic", "01"), ("2.5 - Interlude", "2.5"), ("Book 2 - The Light Fantastic", "2"),
        ("book 3 Equal Rites", "3"), ("Vol. 4 - Mort", "4"), ("#5 Sourcery", "5"), ("6. Wyrd Sisters", "6"),
        ("07) Pyramids", "07"), ("008_Guards", "008"), ("0 - Prequel", "0"),
    ])
    func aNumberedFolderIsAPart(name: String, part: String) {
        #expect(SeriesFolder.part(of: name) == part)
    }

    @Test(arguments: ["3 Body Problem", "2001 - A Space Odyssey", "Dune", "1984", "Catch-22", "12", "01 - "])
    func aTitleThatBeginsWithANumberIsNoPart(name: String) {
        #expect(SeriesFolder.part(of: name) == nil, "\(name)")
    }

    /// The pattern the layout is read by, as a specification: the scanner agrees with it on every name made of a
    /// word or none, a number, a separator and a title (the daemon does without Swift's regex engine).
    @Test func theNameIsReadAsThePatternReadsIt() {
        let pattern = /^(?i:(book|vol|volume|part|#)[ ._]*)?(\d{1,3}(?:\.\d+)?)([ ]*[-–—.:)_][ ]*|[ ]+)(\S.*)$/
        func byPattern(_ name: String) -> String? {
            guard let match = name.wholeMatch(of: pattern),
                  match.output.1 != nil || !match.output.3.allSatisfy({ $0 == " " }) else { return nil }
            return String(match.output.2)
        }
        var disagreements: [String] = []
        var parts = 0
        for word in ["", "Book", "book ", "VOL.", "Volume_", "vol", "Part  ", "#", "Bo"] {
            for number in ["1", "01", "001", "0001", "2.5", "2.", "3.14", "\u{661}\u{662}", "x", ""] {
                for separator in [" - ", "-", " – ", ". ", ".", ":", ") ", "_", " ", "  ", "", " -", "- ", " — "] {
                    for title in ["Title", "", " ", "Ti\ntle", "5 Title", "-x", "é"] {
                        let name = word + number + separator + title
                        let expected = byPattern(name)
                        if expected != nil { parts += 1 }
                        if SeriesFolder.part(of: name) != expected {
                            disagreements.append("\(name.debugDescription): \(String(describing: SeriesFolder.part(of: name))), not \(String(describing: expected))")
                        }
                    }
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(20))")
        #expect(parts > 1000, "the names include parts: \(parts)")
    }

    @Test func theFolderAboveIsTheSeriesUnlessItIsTheImportedOneOrTheRoot() {
        let found = SeriesFolder.series(of: "/books/Pratchett/Discworld/01 - The Colour of Magic", below: "/books")
        #expect(found?.name == "Discworld" && found?.part == "01")
        // The book's own folder imported (opened): the folder above it still names its series.
        #expect(SeriesFolder.series(of: "/books/Discworld/02 - Mort", below: "/books/Discworld/02 - Mort")?.name == "Discworld")
        // Numbered books right in the folder imported, or at the root: no series.
        #expect(SeriesFolder.series(of: "/books/01 - Something", below: "/books/") == nil)
        #expect(SeriesFolder.series(of: "/01 - Something", below: "/elsewhere") == nil)
        #expect(SeriesFolder.series(of: "/books/Discworld/Mort", below: "/books") == nil)
    }
}
