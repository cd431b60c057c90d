import Foundation
import LecternCore
import Logging
import Synchronization
import Testing
import TestSupport
@testable import LecternMedia

/// A CUE sheet beside a real audio file: the chapters an opened file gets from it, and when it gets none.
@Suite struct CueSheetFileTests {
    let folder: TemporaryDirectory
    let logs = LogLines()
    let opener: MediaOpener

    init() throws {
        folder = try TemporaryDirectory(prefix: "lectern-cue")
        let lines = logs
        let logger = Logger(label: "test") { _ in CapturingLogHandler(lines: lines) }
        opener = MediaOpener(coverDirectory: folder.appending("covers"), readers: [MediaReader(program: nil, logger: logger)],
                             logger: logger)
    }

    /// Three tracks in a 3 s file.
    static func sheet(file: String, lastStart: String = "00:02:37") -> String {
        """
        PERFORMER "Ann Reader"
        TITLE "A Book"
        FILE "\(file)" WAVE
          TRACK 01 AUDIO
            TITLE "Opening"
            INDEX 01 00:00:00
          TRACK 02 AUDIO
            TITLE "Chapter One"
            PERFORMER "Guest Voice"
            INDEX 00 00:00:50
            INDEX 01 00:01:00
          TRACK 03 AUDIO
            INDEX 01 \(lastStart)
        """
    }

    /// `book.flac`, 3 s (129 buffers: 2.9953 s), and `sheet` beside it as `sheetName`.
    func book(sheet: String, named sheetName: String) async throws -> URL {
        let book = folder.appending("book.flac")
        try await offThePool { try AudioFiles.flac(book, seconds: 3) }
        try sheet.write(to: folder.appending(sheetName), atomically: true, encoding: .utf8)
        return book
    }

    @Test func aSheetBesideAFileGivesItsChapters() async throws {
        // Named otherwise, it names the file as it was before a conversion: book.wav.
        let book = try await book(sheet: Self.sheet(file: "book.wav"), named: "A Book (Unabridged).cue")
        let item = try #require(try await opener.open(book.path).first)
        #expect(item.chapters == [
            ChapterMark(title: "Opening", start: .zero),
            ChapterMark(title: "Chapter One — Guest Voice", start: .seconds(1)),
            ChapterMark(title: "Track 3", start: .seconds(2) + .seconds(37) / 75),
        ])
        let info = try await opener.discover(book)
        #expect(opener.chapters(of: book, info).map(\.end) == [.seconds(1), .seconds(2) + .seconds(37) / 75, info.duration])
        #expect(logs.warnings.isEmpty)
    }

    @Test func aSheetRunningPastTheFilesEndIsLeftOut() async throws {
        let book = try await book(sheet: Self.sheet(file: "book.flac", lastStart: "00:03:00"), named: "book.cue")
        let item = try #require(try await opener.open(book.path).first)
        #expect(item.chapters.isEmpty)
        #expect(logs.warnings.contains { $0.contains(folder.appending("book.cue").path) && $0.contains("not before the file's end") },
                "\(logs.warnings)")
    }

    @Test func theFilesOwnChaptersWinOverASheet() async throws {
        let book = folder.appending("book.m4b")
        let input = try ChapterBook.ffmpegInput(chaptersFile: folder.appending("chapters.txt"))
        try await offThePool { try AudioFiles.ffmpeg(input + ["-c:a", "aac", book.path]) }
        try Self.sheet(file: "book.m4b").write(to: folder.appending("book.cue"), atomically: true, encoding: .utf8)
        let item = try #require(try await opener.open(book.path).first)
        #expect(item.chapters.map(\.title) == ChapterBook.titles)
        #expect(zip(item.chapters, ChapterBook.starts).allSatisfy { isClose($0.start, to: $1, within: .milliseconds(1)) }, "\(item.chapters)")
    }

    /// Sheets that give the file no chapters, and whether a warning says so.
    @Test(arguments: [
        // Several files: each of them one chapter already.
        ("book.cue", sheet(file: "book.wav") + "\nFILE \"book 2.wav\" WAVE\nTRACK 04 AUDIO\nINDEX 01 00:00:00", false),
        // Another file's sheet.
        ("other.cue", sheet(file: "other.wav"), false),
        // A sheet of the file that cannot be used.
        ("book.cue", "FILE book.flac WAVE\nTRACK 01 AUDIO\nINDEX 01 00:00:75", true),
        ("A Book.cue", "FILE \"book.flac\" WAVE\nTRACK 01 AUDIO\nINDEX 01 00:02:00\nTRACK 02 AUDIO\nINDEX 01 00:01:00", true),
        ("BOOK.FLAC.CUE", String(repeating: "REM padding\n", count: CueSheet.maximumSize / 12 + 1), true),
        ("book.cue", "\u{0}\u{1}\u{2}PNG", true),
    ])
    func sheetsThatGiveNoChapters(name: String, text: String, warned: Bool) async throws {
        let book = try await book(sheet: text, named: name)
        let item = try #require(try await opener.open(book.path).first)
        #expect(item.chapters.isEmpty)
        #expect(logs.warnings.contains { $0.contains(folder.appending(name).path) } == warned, "\(logs.warnings)")
    }

    /// A FIFO named like a sheet is never opened for reading (the read would block): refused from its stat.
    @Test func aFIFONamedLikeASheetIsRefused() async throws {
        let book = folder.appending("book.flac")
        try await offThePool { try AudioFiles.flac(book, seconds: 3) }
        #expect(mkfifo(folder.appending("book.cue").path, 0o600) == 0)
        let item = try #require(try await opener.open(book.path).first)
        #expect(item.chapters.isEmpty)
        #expect(logs.warnings.contains { $0.contains("not a regular file") }, "\(logs.warnings)")
    }
}

/// What was logged, a line per message with its metadata.
final class LogLines: Sendable {
    private let lines = Mutex<[(level: Logger.Level, text: String)]>([])

    func add(_ level: Logger.Level, _ text: String) { lines.withLock { $0.append((level, text)) } }

    var warnings: [String] { lines.withLock { $0.filter { $0.level >= .warning }.map(\.text) } }
}

struct CapturingLogHandler: LogHandler {
    let lines: LogLines
    var logLevel = Logger.Level.trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        lines.add(event.level, "\(event.message) \(event.metadata ?? [:])")
    }
}
