import Foundation
import MP4
import Testing
import TestSupport

/// A small seeded generator (SplitMix64), so a failing input can be made again.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Reads `data` and accepts any outcome but a crash, a hang or an error of another type.
private func survive(_ data: Data, _ comment: Comment? = nil) -> [MP4Chapter]? {
    do {
        let chapters = try MP4ChapterReader.chapters(in: data)
        #expect(chapters.count <= MP4ChapterReader.maximumChapters, comment)
        return chapters
    } catch {
        // Typed throws: only MP4Error can come out.
        _ = error as MP4Error
        return nil
    }
}

@Suite("MP4 reader on damaged and foreign files", .timeLimit(.minutes(1)))
struct GarbageTests {
    let files: MP4Fixtures

    init() async throws {
        files = try await MP4Fixtures.shared()
    }

    @Test("a zero-length file and a text file are not MP4")
    func emptyAndText() throws {
        let directory = try TemporaryDirectory(prefix: "lectern-mp4")
        let empty = directory.appending("empty.m4b")
        try Data().write(to: empty)
        let text = directory.appending("notes.m4b")
        try "Chapter 1: it was a dark and stormy night.\n".write(to: text, atomically: true, encoding: .utf8)
        for url in [empty, text] {
            #expect {
                try MP4ChapterReader.chapters(of: url)
            } throws: { error in
                guard case MP4Error.notMP4(let message) = error else { return false }
                return message.contains(url.lastPathComponent)
            }
        }
    }

    @Test("a missing file and a directory")
    func missing() throws {
        let directory = try TemporaryDirectory(prefix: "lectern-mp4")
        #expect {
            try MP4ChapterReader.chapters(of: directory.appending("nope.m4b"))
        } throws: { error in
            if case MP4Error.notFound = error { true } else { false }
        }
        #expect {
            try MP4ChapterReader.chapters(of: directory.url)
        } throws: { error in
            if case MP4Error.unreadable = error { true } else { false }
        }
    }

    @Test("random bytes, bare and behind an ftyp")
    func randomBytes() {
        var random = SeededGenerator(state: 42)
        for size in [1, 7, 8, 9, 15, 16, 100, 4096, 65_536] {
            let bytes = (0..<size).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            _ = survive(Data(bytes), "random \(size)")
            _ = survive(Data(MP4Bytes.ftyp + bytes), "ftyp + random \(size)")
            _ = survive(Data(MP4Bytes.ftyp + MP4Bytes.atom("moov", bytes)), "ftyp + moov(random \(size))")
        }
    }

    @Test("an m4b with moov at the end, truncated: no moov, a clear error; cut inside moov: no crash")
    func truncatedAtEnd() throws {
        let data = try files.data(.m4b)
        let moov = try #require(AtomSurgery.locate(data, ["moov"]).first)
        let directory = try TemporaryDirectory(prefix: "lectern-mp4")
        let lengths = [1, 7, 8, 28, 36, 44, 1000, data.count / 2, moov.offset, moov.offset + 8,
                       moov.offset + moov.size / 2, data.count - 100, data.count - 1]
        for length in lengths {
            let url = directory.appending("cut-\(length).m4b")
            try data.prefix(length).write(to: url)
            do {
                let chapters = try MP4ChapterReader.chapters(of: url)
                #expect(length > moov.offset, "chapters from \(length) bytes")
                #expect(chapters.count <= ChapterBook.titles.count)
            } catch .notMP4 {
                #expect(length < 8)
            } catch .malformed {
                #expect(length >= 8 && length <= moov.offset + 8, "malformed at \(length)")
            } catch {
                Issue.record("\(length): \(error)")
            }
        }
        // Losing only chpl's last bytes keeps the chapter track.
        let sources = try MP4ChapterReader.sources(in: data.prefix(data.count - 1))
        expectFixtureChapters(sources.quickTimeTrack)
        #expect(sources.nero == nil)
    }

    @Test("a faststart m4b truncated after its chapter samples keeps every chapter")
    func truncatedFaststart() throws {
        let data = try files.data(.faststart)
        let mdat = try #require(AtomSurgery.locate(data, ["mdat"]).first)
        // ffmpeg puts the (tiny) text samples first in mdat.
        for length in [mdat.offset + 200, mdat.offset + 5000, data.count / 2, data.count - 1] {
            expectFixtureChapters(survive(data.prefix(length), "faststart cut at \(length)"))
        }
        for length in [8, 30, 100, 1000, mdat.offset - 1, mdat.offset + 8, mdat.offset + 20] {
            let chapters = survive(data.prefix(length), "faststart cut at \(length)")
            #expect((chapters?.count ?? 0) <= ChapterBook.titles.count)
        }
    }

    @Test("synthetic movies mutated at random (64-bit sizes, co64, chpl): never a crash or a hang")
    func syntheticMutations() throws {
        var random = SeededGenerator(state: 11)
        var wide = SyntheticMovie(chapters: [("A", 0), ("B", 5_000), ("C", 9_000)])
        wide.largeAtoms = true
        wide.wideOffsets = true
        wide.version1 = true
        wide.oneChunk = true
        wide.nero = MP4Bytes.chpl([("a", 0), ("b", 10_000_000)], layout: .mp4v2)
        var narrow = SyntheticMovie(chapters: [("A", 0), ("B", 5_000), ("C", 9_000)])
        narrow.pictureTrackFirst = true
        narrow.nero = MP4Bytes.chpl([("a", 0), ("b", 10_000_000)])
        for movie in [wide, narrow] {
            let original = [UInt8](movie.build())
            for round in 0..<2000 {
                var bytes = original
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let index = Int.random(in: MP4Bytes.ftyp.count..<bytes.count, using: &random)
                    bytes[index] = [0, 1, 0xFF, 0x7F, UInt8.random(in: .min ... .max, using: &random)]
                        .randomElement(using: &random)!
                }
                if Int.random(in: 0..<4, using: &random) == 0 {
                    bytes.removeLast(Int.random(in: 0..<bytes.count / 2, using: &random))
                }
                _ = survive(Data(bytes), "synthetic round \(round)")
            }
        }
    }

    @Test("moov bytes mutated at random: never a crash or a hang")
    func mutations() throws {
        var random = SeededGenerator(state: 7)
        for file in [MP4Fixtures.File.m4b, .faststart] {
            let original = try files.data(file)
            let moov = try #require(AtomSurgery.locate(original, ["moov"]).first)
            for round in 0..<300 {
                var bytes = [UInt8](original)
                for _ in 0..<Int.random(in: 1...8, using: &random) {
                    let index = Int.random(in: moov.offset..<moov.offset + moov.size, using: &random)
                    bytes[index] = switch Int.random(in: 0..<4, using: &random) {
                    case 0: 0
                    case 1: 0xFF
                    case 2: 1
                    default: UInt8.random(in: .min ... .max, using: &random)
                    }
                }
                _ = survive(Data(bytes), "\(file) round \(round)")
            }
        }
    }
}
