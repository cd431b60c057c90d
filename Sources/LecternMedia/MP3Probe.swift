import Foundation
import GStreamer
import LecternLibrary

/// Reads an MP3 file's length and tags without the discoverer's pipeline: the tags (ID3v2 of any version, ID3v1)
/// with GStreamer's own reading of them (``ID3Tags``: libgsttag, as id3demux reads them), the length from a Layer III
/// frame with a Xing/Info header that counts the frames, as LAME and FFmpeg write them. Its answer is the
/// discoverer's for the same file (`MP3ProbeTests` compares them); anything else (chapters, APE tags, no Xing
/// header, another encoder's tag, a file shorter than its header says) is left to the discoverer: `read` returns
/// nil.
///
/// The discoverer builds and tears down a pipeline of five to seven elements and three threads for each file:
/// about 1.7 ms of CPU for a small MP3, against tens of microseconds here (docs/decisions/media-reader.md).
enum MP3Probe {
    /// What the discoverer would say of the MP3 file at `path`; nil when this reader is not certain of it.
    static func read(_ path: String) -> MediaInfo? {
        guard let file = try? RegularFile(path: path) else { return nil }
        let size = file.size
        guard let head = file.read(at: 0, count: 10) else { return nil }

        var v2: [UInt8]?
        var audioStart = 0
        if head.starts(with: Array("ID3".utf8)) {
            // Versions 2.2 to 2.4; the footer flag counts as GStreamer counts it (gst_tag_get_id3v2_tag_size).
            guard (2...4).contains(head[3]), let length = syncsafe(head[6..<10]), length <= 16 << 20 else { return nil }
            audioStart = 10 + length + (head[5] & 0x10 != 0 ? 10 : 0)
            guard audioStart < size, let tag = file.read(at: 0, count: audioStart),
                  !Self.holdsChapters(tag) else { return nil }
            v2 = tag
        }
        // An APE tag at the end (before an ID3v1 tag or not) is the discoverer's: apedemux may read it.
        guard size >= audioStart + 128, let tail = file.read(at: size - 128, count: 128),
              !tail[96...].starts(with: Array("APETAGEX".utf8)) else { return nil }
        let v1 = tail.starts(with: Array("TAG".utf8)) ? tail : nil
        let streamEnd = size - (v1 == nil ? 0 : 128)
        if v1 != nil {
            guard streamEnd >= audioStart + 32, let before = file.read(at: streamEnd - 32, count: 8),
                  !before.starts(with: Array("APETAGEX".utf8)) else { return nil }
        }
        guard let frame = file.read(at: audioStart, count: min(512, streamEnd - audioStart)),
              let samples = Self.samples(frame, fileBytes: streamEnd - audioStart) else { return nil }
        var info = (v2 != nil || v1 != nil ? ID3Tags.read(v2: v2, v1: v1) : nil) ?? MediaInfo()
        info.duration = samples.duration
        return info
    }

    /// Whether an ID3v2 tag may hold chapters (CHAP, CTOC frames: the discoverer's table of contents). By their ids
    /// anywhere in the tag: a text that spells one only costs the file the discoverer's read.
    private static func holdsChapters(_ tag: [UInt8]) -> Bool {
        let ids = [Array("CHAP".utf8), Array("CTOC".utf8)]
        var at = 0
        while at + 4 <= tag.count {
            if tag[at] == 0x43, ids.contains(where: { $0[1] == tag[at + 1] && $0[2] == tag[at + 2] && $0[3] == tag[at + 3] }) { return true }
            at += 1
        }
        return false
    }

    // MARK: The first frame: Xing/Info and LAME tags

    private struct Samples {
        var count: Int64
        var rate: Int64
        /// In whole nanoseconds, rounded down (gst_util_uint64_scale); 128 bits on the way (no overflow).
        var duration: Duration? {
            guard count > 0 else { return nil }
            let product = count.multipliedFullWidth(by: 1_000_000_000)
            return .nanoseconds(rate.dividingFullWidth((high: product.high, low: product.low)).quotient)
        }
    }

    /// The stream's length in samples, from the Xing/Info header of its first frame, less the encoder's delay and
    /// padding when a LAME tag gives them (as mpegaudioparse reads them, FFmpeg's "Lavc"/"Lavf" tags included: see
    /// gapless.c). nil for anything else, or a stream shorter than the header's byte count.
    private static func samples(_ frame: [UInt8], fileBytes: Int) -> Samples? {
        guard frame.count >= 4, frame[0] == 0xFF, frame[1] & 0xE0 == 0xE0 else { return nil }
        let version = (frame[1] >> 3) & 3  // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
        let layer = (frame[1] >> 1) & 3  // 1: Layer III
        let rateIndex = Int((frame[2] >> 2) & 3)
        let bitrateIndex = (frame[2] >> 4) & 0xF
        guard version != 1, layer == 1, rateIndex < 3, bitrateIndex != 0, bitrateIndex != 15 else { return nil }
        let rates: [UInt8: [Int64]] = [3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000]]
        let rate = rates[version]![rateIndex]
        let perFrame: Int64 = version == 3 ? 1152 : 576
        let mono = (frame[3] >> 6) & 3 == 3
        let xing = 4 + (version == 3 ? (mono ? 17 : 32) : (mono ? 9 : 17))
        guard frame.count >= xing + 16, frame[xing..<xing + 4].elementsEqual("Xing".utf8) || frame[xing..<xing + 4].elementsEqual("Info".utf8)
        else { return nil }
        let flags = bigEndian(frame[xing + 4..<xing + 8])
        guard flags & 0x1 != 0 else { return nil }
        var at = xing + 8
        let frames = Int64(bigEndian(frame[at..<at + 4]))
        at += 4
        if flags & 0x2 != 0 {
            guard frame.count >= at + 4, Int(bigEndian(frame[at..<at + 4])) <= fileBytes else { return nil }
            at += 4
        }
        if flags & 0x4 != 0 { at += 100 }
        if flags & 0x8 != 0 { at += 4 }
        guard frames > 0, frames < 1 << 32 else { return nil }
        var count = frames * perFrame
        // The LAME tag: a version string, then 12 bits of delay and 12 of padding 21 bytes in; none (zeros), or
        // another encoder's, whose handling by mpegaudioparse is not known here.
        guard frame.count >= at + 24 else { return nil }
        let name = frame[at..<at + 4]
        if name.elementsEqual("LAME".utf8) || name.elementsEqual("Lavc".utf8) || name.elementsEqual("Lavf".utf8) {
            let delay = Int64(frame[at + 21]) << 4 | Int64(frame[at + 22] >> 4)
            let padding = Int64(frame[at + 22] & 0xF) << 8 | Int64(frame[at + 23])
            guard delay + padding < count else { return nil }
            count -= delay + padding
        } else if name.contains(where: { $0 != 0 }) {
            return nil
        }
        return Samples(count: count, rate: rate)
    }

    // MARK: Bytes

    private static func bigEndian(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// Four bytes of seven bits each; nil when a byte has its high bit set.
    private static func syncsafe(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count == 4, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        return bytes.reduce(0) { $0 << 7 | Int($1) }
    }
}
