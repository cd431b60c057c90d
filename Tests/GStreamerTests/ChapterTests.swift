import Foundation
import GStreamer
import Testing
import TestSupport

/// Files with chapters for the discoverer's TOC (``ChapterBook``'s chapters), made once per test process.
final class ChapterFixtures: Sendable {
    enum File: String, CaseIterable, Sendable {
        /// Vorbis in Matroska, three chapters.
        case mkaVorbis = "book-vorbis.mka"
        /// FLAC in Matroska, the same chapters.
        case mkaFLAC = "book-flac.mka"
        /// AAC in M4B with a QuickTime chapter track and a chpl (ffmpeg writes both).
        case m4b = "book.m4b"
        /// FLAC with the chapters as CHAPTERxxx Vorbis comments (what ffmpeg writes into FLAC).
        case flacComments = "book-comments.flac"
        /// FLAC with a CUESHEET metadata block (three tracks at the chapter starts, no titles).
        case flacCueSheet = "book-cue.flac"
        /// Ogg Vorbis without chapters.
        case plain = "plain.ogg"
    }

    let directory: URL

    func url(_ file: File) -> URL { directory.appendingPathComponent(file.rawValue) }

    static func shared() async throws -> ChapterFixtures {
        ChapterFixtures(directory: try await GeneratedFiles.directory("chapter-fixtures") { root in
            let input = try ChapterBook.ffmpegInput(chaptersFile: root.appendingPathComponent("chapters.txt"))
            func path(_ file: File) -> String { root.appendingPathComponent(file.rawValue).path }
            try AudioFiles.ffmpeg(input + ["-c:a", "libvorbis", path(.mkaVorbis)])
            try AudioFiles.ffmpeg(input + ["-c:a", "flac", path(.mkaFLAC)])
            try AudioFiles.ffmpeg(input + ["-c:a", "aac", path(.m4b)])
            try AudioFiles.ffmpeg(input + ["-c:a", "flac", path(.flacComments)])
            try AudioFiles.ffmpeg(ChapterBook.sine + ["-c:a", "flac", path(.flacCueSheet)])
            let flac = try Data(contentsOf: URL(fileURLWithPath: path(.flacCueSheet)))
            try insertCueSheet(into: flac, sampleRate: 44_100, starts: [0, 441_000, 904_050], totalSamples: 1_323_000)
                .write(to: URL(fileURLWithPath: path(.flacCueSheet)))
            try AudioFiles.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-c:a", "libvorbis", path(.plain)])
        })
    }

    private init(directory: URL) {
        self.directory = directory
    }

    struct UnexpectedLayout: Error {}

    /// `flac` with a CUESHEET block (non-CD: one index point per track, lead-out track 255) after STREAMINFO.
    static func insertCueSheet(into flac: Data, sampleRate: Int, starts: [UInt64], totalSamples: UInt64) throws -> Data {
        func u64(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } }
        var sheet = [UInt8](repeating: 0, count: 128) + u64(0) + [0] + [UInt8](repeating: 0, count: 258)
        sheet.append(UInt8(starts.count + 1))
        for (index, start) in starts.enumerated() {
            sheet += u64(start) + [UInt8(index + 1)] + [UInt8](repeating: 0x30, count: 12) + [0]
                + [UInt8](repeating: 0, count: 13) + [1] + u64(0) + [1, 0, 0, 0]
        }
        sheet += u64(totalSamples) + [255] + [UInt8](repeating: 0, count: 12) + [0] + [UInt8](repeating: 0, count: 13) + [0]
        let bytes = [UInt8](flac)
        guard bytes.count > 42, Array(bytes[0..<4]) == Array("fLaC".utf8), bytes[4] & 0x7F == 0, bytes[4] & 0x80 == 0 else {
            throw UnexpectedLayout()
        }
        let streamInfoEnd = 4 + 4 + 34
        let header: [UInt8] = [5, UInt8(sheet.count >> 16), UInt8((sheet.count >> 8) & 0xFF), UInt8(sheet.count & 0xFF)]
        return Data(bytes[0..<streamInfoEnd] + header + sheet + bytes[streamInfoEnd...])
    }
}

@Suite("Chapters from the discoverer's TOC")
struct ChapterTests {
    let files: ChapterFixtures

    init() async throws {
        files = try await ChapterFixtures.shared()
    }

    @Test("Matroska chapters: titles, starts and ends", arguments: [ChapterFixtures.File.mkaVorbis, .mkaFLAC])
    func matroska(file: ChapterFixtures.File) async throws {
        let info = try await discoverOffThePool(files.url(file))
        #expect(info.chapters.map(\.title) == ChapterBook.titles)
        for (index, chapter) in info.chapters.enumerated() where index < 3 {
            #expect(isClose(chapter.start, to: ChapterBook.starts[index], within: .milliseconds(1)))
            #expect(isClose(chapter.end, to: ChapterBook.ends[index], within: .milliseconds(1)))
        }
    }

    @Test("a FLAC cue sheet comes through as tracks, without titles")
    func flacCueSheet() async throws {
        let info = try await discoverOffThePool(files.url(.flacCueSheet))
        #expect(info.chapters.map(\.title) == ["", "", ""])
        let expected: [Duration] = [.zero, .seconds(10), .milliseconds(20_500), .seconds(30)]
        for (index, chapter) in info.chapters.enumerated() where index < 3 {
            #expect(isClose(chapter.start, to: expected[index], within: .milliseconds(1)))
            #expect(isClose(chapter.end, to: expected[index + 1], within: .milliseconds(1)))
        }
    }

    /// Facts of GStreamer 1.22 the daemon relies on: MP4 chapters need the MP4 module; ffmpeg's FLAC chapters
    /// (CHAPTERxxx comments) are not a TOC.
    @Test("no TOC for M4B chapters, FLAC chapter comments, or a file without chapters",
          arguments: [ChapterFixtures.File.m4b, .flacComments, .plain])
    func noTOC(file: ChapterFixtures.File) async throws {
        let info = try await discoverOffThePool(files.url(file))
        #expect(info.hasAudio)
        #expect(info.chapters == [])
    }
}
