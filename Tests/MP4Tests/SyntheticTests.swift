import Foundation
@testable import MP4
import Testing
import TestSupport

@Suite("MP4 chapters of synthetic atoms")
struct SyntheticTests {
    static let titles = ["Opening", "Chapitre 2 — L’été", "🎧 Three"]

    static var basic: SyntheticMovie {
        SyntheticMovie(chapters: [(titles[0], 0), (titles[1], 10_000), (titles[2], 20_500)])
    }

    @Test("a chapter track, 32-bit atoms, stco, one sample per chunk")
    func basicTrack() throws {
        let sources = try MP4ChapterReader.sources(in: Self.basic.build())
        #expect(sources.nero == nil)
        #expect(sources.duration == .seconds(30))
        expectChapters(sources.quickTimeTrack, titles: Self.titles, starts: [.zero, .seconds(10), .milliseconds(20_500)],
                       ends: [.seconds(10), .milliseconds(20_500), .seconds(30)])
    }

    @Test("64-bit atom sizes, co64, version 1 headers, one chunk, run-length times, another timescale")
    func wideEverything() throws {
        var movie = SyntheticMovie(chapters: [("A", 0), ("B", 441_000), ("C", 882_000)])
        movie.largeAtoms = true
        movie.wideOffsets = true
        movie.version1 = true
        movie.oneChunk = true
        movie.runLengthTimes = true
        movie.trackTimescale = 44_100
        movie.trackDuration = 1_323_000
        movie.movieTimescale = 600
        movie.movieDuration = 18_000
        let chapters = try MP4ChapterReader.chapters(in: movie.build())
        expectChapters(chapters, titles: ["A", "B", "C"], starts: [.zero, .seconds(10), .seconds(20)],
                       ends: [.seconds(10), .seconds(20), .seconds(30)])
    }

    @Test("UTF-16 titles with a byte-order mark, either order; samples without encd",
          arguments: [SyntheticMovie.TitleEncoding.utf16BigEndian, .utf16LittleEndian])
    func utf16(encoding: SyntheticMovie.TitleEncoding) throws {
        var movie = Self.basic
        movie.encoding = encoding
        movie.encdAtoms = false
        #expect(try MP4ChapterReader.chapters(in: movie.build()).map(\.title) == Self.titles)
    }

    @Test("a chapter-artwork track named first is skipped; sbtl handlers are read")
    func pictureTrack() throws {
        var movie = Self.basic
        movie.pictureTrackFirst = true
        movie.textHandler = "sbtl"
        #expect(try MP4ChapterReader.chapters(in: movie.build()).map(\.title) == Self.titles)
    }

    @Test("a track that is not text gives no chapters")
    func notText() throws {
        var movie = Self.basic
        movie.textHandler = "soun"
        #expect(try MP4ChapterReader.sources(in: movie.build()).quickTimeTrack == nil)
    }

    @Test("unknown movie duration: the track's end, or nil for chpl")
    func unknownDuration() throws {
        var movie = Self.basic
        movie.movieDuration = 0
        movie.trackDuration = 31_000
        movie.nero = MP4Bytes.chpl([("x", 0), ("y", 50_000_000)])
        let sources = try MP4ChapterReader.sources(in: movie.build())
        #expect(sources.duration == nil)
        #expect(sources.quickTimeTrack?.last?.end == .seconds(31))
        #expect(sources.nero?.map(\.end) == [.seconds(5), nil])
    }

    @Test("chpl layouts: ffmpeg's, mp4v2's 32-bit count beyond 255, version 0")
    func neroLayouts() throws {
        let three: [(title: String, start100ns: UInt64)] = [("a", 0), ("b", 10_000_000), ("c", 15_000_000)]
        for layout in [MP4Bytes.NeroLayout.ffmpeg, .mp4v2, .version0] {
            var movie = SyntheticMovie(chapters: nil)
            movie.nero = MP4Bytes.chpl(three, layout: layout)
            let chapters = try MP4ChapterReader.chapters(in: movie.build())
            expectChapters(chapters, titles: ["a", "b", "c"], starts: [.zero, .seconds(1), .milliseconds(1500)],
                           ends: [.seconds(1), .milliseconds(1500), .seconds(30)])
        }
        let many = (0..<300).map { (title: "Chapter \($0)", start100ns: UInt64($0) * 10_000_000) }
        var movie = SyntheticMovie(chapters: nil)
        movie.movieDuration = 400_000
        movie.nero = MP4Bytes.chpl(many, layout: .mp4v2)
        let chapters = try MP4ChapterReader.chapters(in: movie.build())
        #expect(chapters.count == 300)
        #expect(chapters.last?.title == "Chapter 299")
        #expect(chapters.last?.start == .seconds(299))
        #expect(chapters.last?.end == .seconds(400))
    }

    @Test("chpl entries out of order are sorted")
    func unsortedNero() throws {
        var movie = SyntheticMovie(chapters: nil)
        movie.nero = MP4Bytes.chpl([("b", 20_000_000), ("a", 0), ("c", 40_000_000)])
        let chapters = try MP4ChapterReader.chapters(in: movie.build())
        #expect(chapters.map(\.title) == ["a", "b", "c"])
        #expect(chapters.map(\.end) == [.seconds(2), .seconds(4), .seconds(30)])
    }

    @Test("a last chapter starting after the movie's end has no end")
    func endBeforeStart() throws {
        var movie = SyntheticMovie(chapters: nil)
        movie.nero = MP4Bytes.chpl([("a", 0), ("late", 400_000_000)])  // 40 s in a 30 s movie
        #expect(try MP4ChapterReader.chapters(in: movie.build()).map(\.end) == [.seconds(40), nil])
    }

    @Test("more than 10,000 chapters: the first 10,000")
    func cap() throws {
        let many = (0..<12_000).map { (title: "", start100ns: UInt64($0) * 10_000_000) }
        var movie = SyntheticMovie(chapters: nil)
        movie.nero = MP4Bytes.chpl(many, layout: .mp4v2)
        let chapters = try MP4ChapterReader.chapters(in: movie.build())
        #expect(chapters.count == MP4ChapterReader.maximumChapters)
    }

    @Test("absurd counts in chpl and in the sample table do not hang or crash")
    func absurdCounts() throws {
        var movie = SyntheticMovie(chapters: nil)
        movie.nero = MP4Bytes.chpl([("a", 0)], layout: .mp4v2, count: .max)
        #expect(try MP4ChapterReader.sources(in: movie.build()).nero == nil)  // entries do not fit: ignored

        // A text track whose tables claim four billion samples in one chunk, one byte each.
        let b = MP4Bytes.self
        let stbl = b.atom("stbl", b.full("stts", b.u32(1) + b.u32(.max) + b.u32(1))
            + b.full("stsz", b.u32(1) + b.u32(.max)) + b.full("stsc", b.u32(1) + b.u32(1) + b.u32(.max) + b.u32(1))
            + b.full("stco", b.u32(.max) + b.u32(0)))
        let moov = b.atom("moov", b.full("mvhd", b.u32(0) + b.u32(0) + b.u32(1000) + b.u32(1000))
            + b.atom("trak", b.full("tkhd", b.u32(0) + b.u32(0) + b.u32(1)) + b.atom("tref", b.atom("chap", b.u32(2))))
            + b.atom("trak", b.full("tkhd", b.u32(0) + b.u32(0) + b.u32(2)) + b.atom("mdia",
                b.full("mdhd", b.u32(0) + b.u32(0) + b.u32(1000) + b.u32(1000))
                + b.full("hdlr", b.u32(0) + Array("text".utf8)) + b.atom("minf", stbl))))
        let data = Data(b.ftyp + moov)
        let chapters = try MP4ChapterReader.chapters(in: data)
        #expect(chapters.count <= MP4ChapterReader.maximumChapters)
    }

    @Test("stsc runs naming chunks that do not exist, or out of order: no chapters, no crash")
    func badChunkRuns() throws {
        let built = Self.basic.build()
        let stsc = try #require(built.range(of: Data("stsc".utf8))).lowerBound - built.startIndex
        for firstChunk: UInt32 in [5, 0, .max] {
            var bytes = [UInt8](built)
            bytes.replaceSubrange(stsc + 12..<stsc + 16, with: MP4Bytes.u32(firstChunk))
            #expect(try MP4ChapterReader.sources(in: Data(bytes)).quickTimeTrack == nil, "first chunk \(firstChunk)")
        }
    }

    @Test("moov with size 0 (to the end of the file) and moov overrunning the file")
    func openEndedMovie() throws {
        let built = [UInt8](Self.basic.build())
        let moovOffset = try #require(AtomSurgery.locate(Data(built), ["moov"]).first?.offset)
        for size: UInt32 in [0, 0x7FFF_FFFF] {
            var bytes = built
            bytes.replaceSubrange(moovOffset..<moovOffset + 4, with: MP4Bytes.u32(size))
            #expect(try MP4ChapterReader.chapters(in: Data(bytes)).map(\.title) == Self.titles)
        }
    }

    @Test("a child overrunning its parent, or smaller than its header, ends that walk without a crash")
    func badChildren() throws {
        let b = MP4Bytes.self
        let nero = b.chpl([("a", 0), ("b", 10_000_000)])
        // chpl says it is far larger than udta: clamped to udta, its entries still fit.
        let overrun = b.atom("chpl", Array(nero.dropFirst(8)), declaredSize: 1_000_000)
        var movie = SyntheticMovie(chapters: nil)
        movie.nero = overrun
        #expect(try MP4ChapterReader.chapters(in: movie.build()).map(\.title) == ["a", "b"])
        // A chpl cut short inside udta: ignored.
        movie.nero = b.atom("chpl", Array(nero.dropFirst(8).dropLast(3)))
        #expect(try MP4ChapterReader.sources(in: movie.build()).nero == nil)
        // An atom of size 4 before udta: the walk of moov stops there.
        movie.nero = nero
        var bytes = [UInt8](movie.build())
        let udta = try #require(AtomSurgery.locate(Data(bytes), ["moov", "udta"]).last)
        bytes.replaceSubrange(udta.offset..<udta.offset + 4, with: b.u32(4))
        #expect(try MP4ChapterReader.chapters(in: Data(bytes)) == [])
        // A 64-bit size smaller than its header.
        bytes = [UInt8](movie.build())
        bytes.replaceSubrange(udta.offset..<udta.offset + 8, with: b.u32(1) + Array("udta".utf8))
        bytes.insert(contentsOf: b.u64(3), at: udta.offset + 8)
        #expect(try MP4ChapterReader.chapters(in: Data(bytes)) == [])
    }

    @Test("not an MP4, or no moov")
    func notMP4() throws {
        #expect(throws: MP4Error.notMP4("data is not an MP4 file (it does not begin with an MP4 atom)")) {
            try MP4ChapterReader.chapters(in: Data())
        }
        #expect {
            try MP4ChapterReader.chapters(in: Data("hello, this is text\n".utf8))
        } throws: { error in
            if case MP4Error.notMP4 = error { true } else { false }
        }
        #expect {
            try MP4ChapterReader.chapters(in: Data(MP4Bytes.ftyp + MP4Bytes.atom("free", [1, 2, 3])))
        } throws: { error in
            if case MP4Error.malformed = error { true } else { false }
        }
    }

    @Test("a file source reads only what it is asked for, and never past the end")
    func fileSource() throws {
        let data = Self.basic.build()
        let directory = try TemporaryDirectory(prefix: "lectern-mp4")
        let url = directory.appending("s.m4b")
        try data.write(to: url)
        let source = try FileSource(url)
        #expect(source.size == UInt64(data.count))
        #expect(try source.read(at: 4, count: 4) == Array("ftyp".utf8))
        #expect(throws: MP4Error.self) { try source.read(at: UInt64(data.count) - 2, count: 4) }
        #expect(throws: MP4Error.self) { try source.read(at: .max, count: 1) }
        #expect(try source.read(at: UInt64(data.count), count: 0) == [])
    }
}

