import Foundation
import LecternCore
import Testing
@testable import LecternMedia

/// The CUE sheet parser: what it makes of sheets as rippers and converters write them, and what it refuses.
@Suite struct CueSheetTests {
    static let book = """
        REM GENRE Audiobook
        REM COMMENT "ExactAudioCopy v1.6"
        PERFORMER "Ann Reader"
        TITLE "A Book"
        FILE "book.wav" WAVE
          TRACK 01 AUDIO
            TITLE "Opening Credits"
            PERFORMER "Ann Reader"
            INDEX 01 00:00:00
          TRACK 02 AUDIO
            TITLE "Chapter One"
            INDEX 00 00:10:00
            INDEX 01 00:12:00
          TRACK 03 AUDIO
            TITLE "A Poem"
            PERFORMER "Guest Voice"
            INDEX 01 01:02:37
            INDEX 02 01:30:00
          TRACK 04 AUDIO
            INDEX 01 61:00:74
        """

    @Test func aSheetGivesItsTracksAsChapters() throws {
        let sheet = try CueSheet(bytes: Array(Self.book.utf8))
        #expect(sheet.title == "A Book" && sheet.performer == "Ann Reader")
        #expect(sheet.files.map(\.name) == ["book.wav"])
        let chapters = sheet.chapters(endingAt: .seconds(3700))
        // A track's performer shows when it is not the disc's; an untitled track is "Track N".
        #expect(chapters.map(\.title) == ["Opening Credits", "Chapter One", "A Poem — Guest Voice", "Track 4"])
        // INDEX 01 starts a track, not its pre-gap (INDEX 00), nor an INDEX 02.
        let starts: [Duration] = [.zero, .seconds(12), .seconds(62) + .seconds(37) / 75, .seconds(3660) + .seconds(74) / 75]
        #expect(chapters.map(\.start) == starts)
        #expect(chapters.map(\.end) == Array(starts.dropFirst()) + [.seconds(3700)])
    }

    @Test func framesAreSeventyFifthsOfASecond() throws {
        let start = try #require(try CueSheet(text: "FILE a.wav WAVE\nTRACK 1 AUDIO\nINDEX 01 01:02:37").files.first?.tracks.first?.start)
        #expect(start == .seconds(62) + .seconds(37) / 75)
        #expect(start.microseconds == 62_493_333)  // 37 / 75 s = 0.493333… s
        // Minutes past 99: a book is longer than a CD.
        let late = try CueSheet(text: "FILE a.wav WAVE\nTRACK 1 AUDIO\nINDEX 01 754:12:00").files[0].tracks[0].start
        #expect(late == .seconds(754 * 60 + 12))
    }

    @Test func crlfAndAByteOrderMarkReadAlike() throws {
        let plain = try CueSheet(bytes: Array(Self.book.utf8))
        let windows = [0xEF, 0xBB, 0xBF] + Array(Self.book.replacingOccurrences(of: "\n", with: "\r\n").utf8)
        #expect(try CueSheet(bytes: windows) == plain)
    }

    @Test func textThatIsNotUTF8IsLatin1() throws {
        // "Été à Paris" and "Zoë" in Latin-1, as an old ripper writes them.
        let bytes: [UInt8] = Array("PERFORMER \"Zo".utf8) + [0xEB] + Array("\"\nFILE \"b.wav\" WAVE\nTRACK 01 AUDIO\nTITLE \"".utf8)
            + [0xC9] + Array("t".utf8) + [0xE9, 0x20, 0xE0] + Array(" Paris\"\nINDEX 01 00:00:00\n".utf8)
        let sheet = try CueSheet(bytes: bytes)
        #expect(sheet.performer == "Zoë")
        #expect(sheet.chapters(endingAt: nil).map(\.title) == ["Été à Paris"])
    }

    @Test func unquotedValuesTabsAndKeywordsInAnyCase() throws {
        let sheet = try CueSheet(text: "title My Book\nfile My Book.flac FLAC\n\ttrack 1 audio\n\t\ttitle Part One\n\t\tindex 1 0:05:00\n")
        #expect(sheet.title == "My Book")
        #expect(sheet.files.map(\.name) == ["My Book.flac"])
        #expect(sheet.files[0].tracks == [CueSheet.Track(number: 1, title: "Part One", start: .seconds(5))])
    }

    @Test func aSheetOfSeveralFilesStartsEachFilesTracksAgain() throws {
        let sheet = try CueSheet(text: """
            FILE "01.flac" WAVE
            TRACK 01 AUDIO
            INDEX 01 00:00:00
            FILE "02.flac" WAVE
            TRACK 02 AUDIO
            INDEX 01 00:00:00
            """)
        #expect(sheet.files.map(\.name) == ["01.flac", "02.flac"])
        #expect(CueSheet.fileNames(in: "FILE \"C:\\rips\\Book.WAV\" WAVE\nTRACK 1 AUDIO\nINDEX 01 99:99:99") == ["C:\\rips\\Book.WAV"])
    }

    @Test func aFileLineNamesTheFileWhateverItsCaseOrExtension() {
        #expect(CueSheetFile.names("book.flac", "book.wav"))
        #expect(CueSheetFile.names("Book.m4b", "C:\\rips\\BOOK.WAV"))
        #expect(CueSheetFile.names("book.flac", "sub/book"))
        #expect(!CueSheetFile.names("book.flac", "book 2.wav"))
        #expect(!CueSheetFile.names("book.flac", ""))
    }

    /// Each malformed sheet is refused, saying the line.
    @Test(arguments: [
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:00:75", 3),            // frames run to 74
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:60:00", 3),            // seconds to 59
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 -1:00:00", 3),            // a negative time
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:00", 3),               // not mm:ss:ff
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 1234567:00:00", 3),       // minutes to six digits
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01", 3),                     // no time
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nTITLE \"x\"\nTRACK 02 AUDIO\nINDEX 01 00:01:00", 2),  // track 1 has no INDEX 01
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 00 00:00:00", 2),            // a pre-gap alone
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:05:00\nTRACK 02 AUDIO\nINDEX 01 00:04:00", 4),  // decreasing
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:05:00\nTRACK 02 AUDIO\nINDEX 01 00:05:00", 4),  // the same start
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:00:00\nINDEX 01 00:01:00", 4),  // two INDEX 01
        ("FILE a.wav WAVE\nINDEX 01 00:00:00", 2),                            // an INDEX outside a track
        ("TRACK 01 AUDIO\nINDEX 01 00:00:00", 1),                             // a TRACK before any FILE
        ("FILE a.wav WAVE\nTRACK one AUDIO\nINDEX 01 00:00:00", 2),           // not a track number
        ("REM nothing here\nTITLE \"A Book\"", 0),                            // no track
        ("", 0),
    ])
    func malformedSheetsAreRefused(_ text: String, line: Int) {
        let error = #expect(throws: CueSheetError.self) { try CueSheet(bytes: Array(text.utf8)) }
        guard case .malformed(let at, _)? = error else {
            Issue.record("not malformed: \(String(describing: error))")
            return
        }
        #expect(at == line)
    }

    @Test func hostileInputIsRefusedWithoutACrash() {
        let oversized = Array(repeating: UInt8(ascii: "R"), count: CueSheet.maximumSize + 1)
        #expect(throws: CueSheetError.tooLarge(CueSheet.maximumSize + 1)) { try CueSheet(bytes: oversized) }
        // A binary file named .cue: its control characters say it is not text.
        let binary: [UInt8] = Array("FILE a.wav WAVE\n".utf8) + [0x00, 0x01, 0xFF, 0xFE, 0x89, 0x50, 0x4E, 0x47]
        #expect(throws: CueSheetError.notText(line: 2)) { try CueSheet(bytes: binary) }
        let hugeLine = "FILE a.wav WAVE\nTRACK 01 AUDIO\nTITLE \"" + String(repeating: "x", count: 5_000) + "\"\nINDEX 01 00:00:00"
        #expect(throws: CueSheetError.malformed(line: 3, "a line of 5008 bytes, more than 4096")) { try CueSheet(text: hugeLine) }

        // Random bytes and random shuffles of a sheet's lines: each is refused or gives tracks in time order.
        var generator = SystemRandomNumberGenerator()
        let lines = Self.book.split(separator: "\n").map(String.init)
        for round in 0..<2_000 {
            let bytes: [UInt8]
            if round.isMultiple(of: 2) {
                bytes = (0..<Int.random(in: 0...300, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            } else {
                bytes = Array(lines.shuffled(using: &generator).prefix(Int.random(in: 1...lines.count)).joined(separator: "\n").utf8)
            }
            guard let sheet = try? CueSheet(bytes: bytes) else { continue }
            for file in sheet.files {
                #expect(zip(file.tracks, file.tracks.dropFirst()).allSatisfy { $0.start < $1.start }, "\(bytes)")
            }
            #expect(sheet.files.contains { !$0.tracks.isEmpty })
        }
    }
}
