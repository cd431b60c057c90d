import CGStreamerShims
import Foundation
import GStreamer
import Testing
import TestSupport

/// MP3s written by FFmpeg carry their encoder delay and padding in a LAME tag under FFmpeg's own version string;
/// Lectern makes GStreamer honour it (Sources/CGStreamerShims/mp3_gapless.c). The playbin side is measured by
/// Integration/Gapless (a two-file book rendered without a gap); here: the discoverer's durations and the tag
/// finder on good and bad bytes.
@Suite("MP3 encoder delay and padding")
struct MP3GaplessTests {
    /// A 1.3 s MP3 written by ffmpeg (libmp3lame), and its bytes after the ID3v2 tag (where the stream starts).
    private static func ffmpegMP3(in folder: TemporaryDirectory) throws -> (url: URL, stream: [UInt8]) {
        let url = folder.appending("1.3s.mp3")
        try AudioFiles.mp3(url, seconds: 1.3)
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
    func duration() throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp3-gapless")
        defer { folder.remove() }
        let (url, _) = try Self.ffmpegMP3(in: folder)
        // 57,330 samples at 44.1 kHz; untrimmed, 51 frames of 1,152 samples = 1.3322 s.
        let duration = try #require(try Discoverer.discover(url).duration)
        #expect(duration > .milliseconds(1_299) && duration < .milliseconds(1_301), "\(duration)")
    }

    @Test("the tag is found in FFmpeg's first frame, and only there")
    func tagFinder() throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp3-gapless")
        defer { folder.remove() }
        let (_, stream) = try Self.ffmpegMP3(in: folder)
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
