import LecternCore
import Testing

@Suite struct NaturalOrderTests {
    @Test func numbersCompareByValueAndLettersWithoutCase() {
        #expect(["10.mp3", "2.mp3", "1.mp3"].sorted(by: NaturalOrder.areInIncreasingOrder) == ["1.mp3", "2.mp3", "10.mp3"])
        #expect(NaturalOrder.compare("Book b", "book A") == 1)
        #expect(NaturalOrder.compare("Part 007", "part 7") == 0)
        #expect(NaturalOrder.areInIncreasingOrder("Part 007", "part 7"))
    }

    /// Names without digits compare as the lists of their characters each lowercased alone, whether both characters
    /// compared are ASCII (compared without making strings) or not: letters of both cases, the punctuation between
    /// the cases' letters ("[", "_", "`"), characters beyond ASCII and one that lowercases to two ("İ").
    @Test func charactersCompareAsEachLowercasedAlone() {
        let pieces = ["a", "B", "Z", "z", "[", "_", "`", "{", " ", "-", "É", "é", "ß", "Ω", "ı", "İ", "Å", "ǅ", "\u{301}"]
        var names = pieces
        for first in pieces { for second in pieces { names.append(first + second) } }
        func lowered(_ name: String) -> [String] { name.unicodeScalars.map { String($0).lowercased() } }
        var differing: [String] = []
        for a in names {
            for b in names {
                let (la, lb) = (lowered(a), lowered(b))
                let expected = la == lb ? 0 : la.lexicographicallyPrecedes(lb) ? -1 : 1
                if NaturalOrder.compare(a, b) != expected { differing.append("\(a) vs \(b)") }
            }
        }
        #expect(differing.count == 0, "for example \(differing.first ?? "")")
    }
}
