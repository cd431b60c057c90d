import Foundation
import LecternCore
import Testing

/// `Lyrics`: LRC and plain text, read as a listener would see them, and the bad input a file can hold.
@Suite struct LyricsTests {
    func parse(_ text: String) throws -> Lyrics { try Lyrics(lrc: Array(text.utf8)) }

    @Test func linesAreSortedByTimeWithRepeatedLinesAtEachOfTheirTimes() throws {
        let lyrics = try parse("""
            [ti:A song]
            [ar:Someone]
            [00:10.50]Second
            [00:01.00]First
            [00:20.00][00:30.25]Chorus
            [01:02.5]Late
            [00:25:10]Colon hundredths
            """)
        #expect(lyrics.lines == [
            .init(start: .seconds(1), text: "First"),
            .init(start: .milliseconds(10_500), text: "Second"),
            .init(start: .seconds(20), text: "Chorus"),
            .init(start: .milliseconds(25_100), text: "Colon hundredths"),
            .init(start: .milliseconds(30_250), text: "Chorus"),
            .init(start: .milliseconds(62_500), text: "Late"),
        ])
        #expect(lyrics.text == "First\nSecond\nChorus\nColon hundredths\nChorus\nLate")
        #expect(lyrics.isSynced)
    }

    @Test func theLineAtAPositionIsTheLastStartedOne() throws {
        let lyrics = try parse("[00:01.00]a\n[00:02.00]b\n[00:02.00]c\n[00:05.00]d")
        #expect(lyrics.lineIndex(at: .zero) == nil)
        #expect(lyrics.lineIndex(at: .milliseconds(999)) == nil)
        #expect(lyrics.lineIndex(at: .seconds(1)) == 0)
        #expect(lyrics.lineIndex(at: .milliseconds(1_999)) == 0)
        #expect(lyrics.lineIndex(at: .seconds(2)) == 2)  // two lines at once: the later one in the file
        #expect(lyrics.lineIndex(at: .seconds(4)) == 2)
        #expect(lyrics.lineIndex(at: .seconds(500)) == 3)
        // Against a linear scan, over a long transcript.
        let long = try parse((0..<5_000).map { "[\(String(format: "%02d:%02d.%02d", $0 / 600, $0 / 10 % 60, $0 % 10 * 10))]line \($0)" }
            .joined(separator: "\n"))
        #expect(long.lines.count == 5_000)
        for tenth in stride(from: -1, to: 5_010, by: 7) {
            let position = Duration.milliseconds(tenth * 100 + 50)
            #expect(long.lineIndex(at: position) == long.lines.lastIndex { $0.start <= position })
        }
    }

    @Test func anOffsetMovesEveryLineEarlierOrLater() throws {
        let earlier = try parse("[offset:+500]\n[00:01.00]a\n[00:00.20]b")
        #expect(earlier.lines.map(\.start) == [.zero, .milliseconds(500)])
        let later = try parse("[offset:-250]\n[00:01.00]a")
        #expect(later.lines.map(\.start) == [.milliseconds(1_250)])
    }

    @Test func aByteOrderMarkCRLFAndWordTimesAreRead() throws {
        let lyrics = try Lyrics(lrc: [0xEF, 0xBB, 0xBF] + Array("[00:01.00]<00:01.00>Hello <00:01.50>world\r\n[00:02.00] Two \r\n".utf8))
        #expect(lyrics.lines == [.init(start: .seconds(1), text: "Hello world"), .init(start: .seconds(2), text: "Two")])
    }

    @Test func textWithoutTimesIsUnsyncedText() throws {
        let lyrics = try parse("\u{FEFF}\r\nChapter one\r\n\r\n[Narrator] It was a dark night.\r\nThe end.\r\n\r\n")
        #expect(!lyrics.isSynced)
        #expect(lyrics.lineIndex(at: .seconds(1)) == nil)
        #expect(lyrics.text == "Chapter one\n\n[Narrator] It was a dark night.\nThe end.")
    }

    @Test func badInputIsAnErrorNeverACrash() throws {
        #expect(throws: LyricsError.notUTF8) { try Lyrics(lrc: Array("[00:01.00]caf".utf8) + [0xE9, 0x0A]) }
        #expect(throws: LyricsError.tooLarge(Lyrics.maximumSize + 1)) {
            try Lyrics(lrc: [UInt8](repeating: 0x61, count: Lyrics.maximumSize + 1))
        }
        #expect(throws: LyricsError.malformed(line: 2, "not a time: [00:75.00]")) { try parse("[00:01.00]a\n[00:75.00]b") }
        #expect(throws: LyricsError.malformed(line: 1, "not a time: [1:2:3:4]")) { try parse("[1:2:3:4]x") }
        #expect(throws: LyricsError.malformed(line: 1, "not an offset in milliseconds: [offset:soon]")) { try parse("[offset:soon]") }
        #expect(throws: LyricsError.malformed(line: 2, "a control character (0x00)")) { try Lyrics(lrc: Array("a\nb".utf8) + [0x00]) }
        // Random bytes: an error or some text, never a trap.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let bytes = (0..<Int.random(in: 0..<200, using: &generator)).map { _ in
                "[]0123456789:.-+ofset\n\r<>ab".utf8.randomElement(using: &generator)!
            }
            _ = try? Lyrics(lrc: bytes)
        }
        // Exactly the cap is read.
        let atCap = try Lyrics(lrc: [UInt8](repeating: 0x61, count: Lyrics.maximumSize))
        #expect(atCap.text.utf8.count == Lyrics.maximumSize)
    }

    /// A cursor holds from its line's start until the next line's: the player finds the line again (a binary search)
    /// only once the position leaves it. Its answer is the search's wherever it holds.
    @Test func aCursorHoldsUntilTheNextLine() throws {
        let lyrics = try Lyrics(lrc: Array("[00:01.00]a\n[00:02.00]b\n[00:02.00]c\n[00:04.00]d".utf8))
        let before = LyricsCursor(index: nil)
        #expect(before.holds(.milliseconds(999), in: lyrics))
        #expect(!before.holds(.seconds(1), in: lyrics))
        #expect(LyricsCursor(index: 0).holds(.milliseconds(1_999), in: lyrics))
        #expect(!LyricsCursor(index: 0).holds(.seconds(2), in: lyrics))
        #expect(!LyricsCursor(index: 1).holds(.seconds(2), in: lyrics), "two lines at 2 s: the last is heard")
        #expect(LyricsCursor(index: 2).holds(.seconds(3), in: lyrics))
        #expect(LyricsCursor(index: 3).holds(.seconds(3600), in: lyrics))
        #expect(!LyricsCursor(index: 3).holds(.seconds(3), in: lyrics))
        #expect(!LyricsCursor(index: 7).holds(.seconds(3), in: lyrics), "another file's line")
        #expect(!before.holds(.zero, in: try Lyrics(lrc: Array("words".utf8))))
        for tenth in 0..<50 {
            let position = Duration.milliseconds(100 * tenth)
            let found = try #require(LyricsCursor(lyrics, at: position))
            #expect(found.holds(position, in: lyrics))
            for index in [nil, 0, 1, 2, 3] where LyricsCursor(index: index).holds(position, in: lyrics) {
                #expect(index == found.index)
            }
        }
    }

    /// A chapter's words: the line heard at its start and those starting before its end; unsynced text is all of it.
    @Test func theTextHeardBetweenTwoPlaces() throws {
        let lyrics = try Lyrics(lrc: Array("[00:01.00]a\n[00:05.00]b\n[00:09.50]c\n[00:12.00]d".utf8))
        #expect(lyrics.text(from: .zero, to: .seconds(10)) == "a\nb\nc")
        #expect(lyrics.text(from: .seconds(10), to: .seconds(20)) == "c\nd", "c is heard at 10 s")
        #expect(lyrics.text(from: .seconds(12), to: nil) == "d")
        #expect(lyrics.text(from: .zero, to: .seconds(1)) == nil, "nothing heard before the first line")
        #expect(lyrics.text(from: .zero, to: nil) == lyrics.text)
        #expect(lyrics.text(from: .seconds(5), to: .seconds(5) + .milliseconds(1)) == "b")
        let words = try Lyrics(lrc: Array("just words".utf8))
        #expect(words.text(from: .seconds(10), to: .seconds(20)) == "just words")
        #expect(try Lyrics(lrc: []).text(from: .zero, to: nil) == nil)
        // The chapters of a file share its lines out.
        var item = MediaItem(id: 1, url: URL(fileURLWithPath: "/b.m4b"), duration: .seconds(30),
                             chapters: [ChapterMark(title: "1", start: .zero), ChapterMark(title: "2", start: .seconds(10))])
        item.lyrics = lyrics
        #expect(Chapter.chapters(of: [item]).map(\.text) == ["a\nb\nc", "c\nd"])
    }
}
