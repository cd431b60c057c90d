import CGStreamerShims
import Foundation
import GStreamer
import Testing
import TestSupport

/// MP3s written by FFmpeg carry their encoder delay and padding in a LAME tag under FFmpeg's own version string;
/// Lectern makes GStreamer honour it (Sources/CGStreamerShims/gapless.c). The playbin side is measured by
/// Integration/Gapless (a two-file book rendered without a gap); here: the discoverer's durations and the tag
/// finder on good and bad bytes.
@Suite("MP3 encoder delay and padding")
struct MP3GaplessTests {
    /// A 1.3 s MP3 written by ffmpeg (libmp3lame), and its bytes after the ID3v2 tag (where the stream starts).
    private static func ffmpegMP3(in folder: TemporaryDirectory) async throws -> (url: URL, stream: [UInt8]) {
        let url = folder.appending("1.3s.mp3")
        try await offThePool { try AudioFiles.mp3(url, seconds: 1.3) }
        let bytes = [UInt8](try Data(contentsOf: url))
        var start = 0
        if bytes.count >= 10, bytes[0..<3] == [0x49, 0x44, 0x33] {   // "ID3": 10-byte header, syncsafe size
            start = 10 + (Int(bytes[6]) << 21 | Int(bytes[7]) << 14 | Int(bytes[8]) << 7 | Int(bytes[9]))
        }
        return (url, Array(bytes[start...]))
    }

    private static func tagOffset(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBufferPointer { lectern_mp3_ffmpeg_gapless_tag($0.baseAddress, $0.count) }
    }

    @Test("the discoverer reports the source's length, not the encoder's padded one")
    func duration() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp3-gapless")
        defer { folder.remove() }
        let (url, _) = try await Self.ffmpegMP3(in: folder)
        // 57,330 samples at 44.1 kHz; untrimmed, 51 frames of 1,152 samples = 1.3322 s.
        let duration = try #require(try await discoverOffThePool(url).duration)
        #expect(duration > .milliseconds(1_299) && duration < .milliseconds(1_301), "\(duration)")
    }

    @Test("the tag is found in FFmpeg's first frame, and only there")
    func tagFinder() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp3-gapless")
        defer { folder.remove() }
        let (_, stream) = try await Self.ffmpegMP3(in: folder)
        let offset = Self.tagOffset(stream)
        try #require(offset > 0)
        #expect(String(decoding: stream[offset..<offset + 3], as: UTF8.self) == "Lav")

        // LAME's own tag is GStreamer's business: left alone.
        var lame = stream
        lame.replaceSubrange(offset..<offset + 4, with: Array("LAME".utf8))
        #expect(Self.tagOffset(lame) == -1)
        // Cut anywhere before the end of what GStreamer reads (36 bytes from the version string): never found,
        // never read past the end (the address sanitizer would see it; here a cut copy has no bytes beyond).
        for length in 0..<(offset + 36) {
            #expect(Self.tagOffset(Array(stream[..<length])) == -1, "cut at \(length)")
        }
        #expect(Self.tagOffset(Array(stream[..<(offset + 36)])) == offset)
        // Not MP3 at all.
        var random = SeededGenerator(seed: 7)
        let noise = (0..<8_192).map { _ in UInt8.random(in: 0...255, using: &random) }
        #expect(Self.tagOffset(noise) == -1)
        #expect(Self.tagOffset([]) == -1)
    }
}

/// AAC in MP4 (Sources/CGStreamerShims/gapless.c): the priming-skipping edit is lengthened just past the last
/// packet, which qtdemux 1.22 would drop. The playbin side is measured by Integration/Gapless.
@Suite("MP4 edit lists and the last AAC packet")
struct MP4EditTests {
    /// The moov box of a 1.3 s AAC file written by ffmpeg (movie timescale 1,000: the edit lasts 1,300).
    private static func ffmpegMoov(in folder: TemporaryDirectory) async throws -> [UInt8] {
        let wav = folder.appending("1.3s.wav")
        let m4a = folder.appending("1.3s.m4a")
        try await offThePool {
            try AudioFiles.gst("audiotestsrc num-buffers=1 samplesperbuffer=57330 ! audio/x-raw,format=S16LE,channels=1,rate=44100 ! wavenc ! filesink location=\(wav.path)")
            try AudioFiles.ffmpeg(["-i", wav.path, "-c:a", "aac", m4a.path])
        }
        let bytes = [UInt8](try Data(contentsOf: m4a))
        var at = 0
        while at + 8 <= bytes.count {
            let size = Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            if Array(bytes[at + 4..<at + 8]) == Array("moov".utf8) { return Array(bytes[at..<at + size]) }
            guard size >= 8 else { break }
            at += size
        }
        throw NoMoov()
    }

    private struct NoMoov: Error {}

    private static func extend(_ bytes: inout [UInt8]) -> (Int, UInt64) {
        var added: UInt64 = 0
        let count = bytes.withUnsafeMutableBufferPointer { lectern_mp4_extend_priming_edits($0.baseAddress, $0.count, &added) }
        return (count, added)
    }

    /// The segment duration of the first elst entry (version 0).
    private static func editDuration(_ bytes: [UInt8]) -> Int? {
        guard let at = (0..<bytes.count - 4).first(where: { Array(bytes[$0..<$0 + 4]) == Array("elst".utf8) }) else { return nil }
        let field = at + 4 + 8
        return Int(bytes[field]) << 24 | Int(bytes[field + 1]) << 16 | Int(bytes[field + 2]) << 8 | Int(bytes[field + 3])
    }

    @Test("ffmpeg's AAC edit is lengthened just past the last packet, once")
    func lengthened() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp4-edit")
        defer { folder.remove() }
        var moov = try await Self.ffmpegMoov(in: folder)
        #expect(Self.editDuration(moov) == 1_300)
        let (count, added) = Self.extend(&moov)
        #expect(count == 1)
        // The last packet starts at media time 57,344/44,100 s = 1,300.3 ms: the edit must end after it.
        #expect(Self.editDuration(moov) == 1_301)
        #expect(added == 1_000_000)
        // Done: a second pass has nothing left to do.
        #expect(Self.extend(&moov).0 == 0)
    }

    @Test("cut short or garbage: nothing written past the end, never a crash")
    func damaged() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp4-edit")
        defer { folder.remove() }
        let moov = try await Self.ffmpegMoov(in: folder)
        // A moov box cut short declares more than there is: refused whole, nothing changed.
        for length in stride(from: 0, to: moov.count, by: 7) {
            var cut = Array(moov[..<length])
            #expect(Self.extend(&cut).0 == -1, "cut at \(length)")
            #expect(cut == Array(moov[..<length]), "cut at \(length)")
        }
        // Random contents under a moov header: whatever is found, the walk stays inside the box.
        var random = SeededGenerator(seed: 11)
        for _ in 0..<200 {
            var noise: [UInt8] = [0, 0, 4, 0] + Array("moov".utf8) + (0..<1_016).map { _ in UInt8.random(in: 0...255, using: &random) }
            #expect((-1...1).contains(Self.extend(&noise).0))
            #expect(noise.count == 1_024)
        }
        var empty: [UInt8] = []
        #expect(Self.extend(&empty).0 == -1)
    }
}
