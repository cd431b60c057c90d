import Foundation
import GStreamer
import LecternLibrary

/// Reads an MP3 file's length and tags without GStreamer, for the files whose layout it knows for certain: an
/// ID3v2.3 or 2.4 tag of plain text frames (title, artists, album, album artist, genre, track, disc), lyrics (USLT,
/// SYLT: ``TagLyrics``, as after the discoverer) and at most one JPEG or PNG picture, then a Layer III frame with a
/// Xing/Info header that counts the frames, as LAME and FFmpeg write them. Its answer is the discoverer's for the same file (`MP3ProbeTests` compares them); anything else
/// (chapters, ID3v1 or APE tags, unsynchronisation, compressed or encrypted frames, numeric genres, several values
/// in a frame, text that is neither ASCII nor valid in its encoding, a file shorter than its header says) is left
/// to the discoverer: `read` returns nil.
///
/// The discoverer builds and tears down a pipeline of five to seven elements and three threads for each file:
/// about 1.7 ms of CPU for a small MP3, against tens of microseconds here (docs/decisions/media-reader.md).
enum MP3Probe {
    /// What the discoverer would say of the MP3 file at `path`; nil when this reader is not certain of it.
    static func read(_ path: String) -> MediaInfo? {
        guard let file = try? RegularFile(path: path) else { return nil }
        let size = file.size
        guard let head = file.read(at: 0, count: 10) else { return nil }

        var tags = Tags()
        var audioStart = 0
        if head.starts(with: Array("ID3".utf8)) {
            let major = head[3], flags = head[5]
            // 2.3 and 2.4 only; no unsynchronisation, extended header or experimental flag; 2.4's footer counts.
            guard major == 3 || major == 4, flags & 0xE0 == 0, let length = syncsafe(head[6..<10]) else { return nil }
            audioStart = 10 + length + (major == 4 && flags & 0x10 != 0 ? 10 : 0)
            guard length <= 16 << 20, audioStart < size, let body = file.read(at: 10, count: length),
                  tags.parse(body, major: major) else { return nil }
        }
        // No ID3v1 or APE tag at the end (GStreamer merges them in): those files are the discoverer's.
        guard size >= audioStart + 128, let tail = file.read(at: size - 128, count: 128),
              !tail.starts(with: Array("TAG".utf8)), !tail[96...].starts(with: Array("APETAGEX".utf8)) else { return nil }
        guard let frame = file.read(at: audioStart, count: min(512, size - audioStart)),
              let samples = Self.samples(frame, fileBytes: size - audioStart) else { return nil }
        return MediaInfo(duration: samples.duration, title: tags.title, artists: tags.artists, album: tags.album,
                         albumArtist: tags.albumArtist, genre: tags.genre, trackNumber: tags.track, discNumber: tags.disc,
                         hasAudio: true, cover: tags.cover, chapters: [],
                         lyrics: TagLyrics.first(tags.synced + tags.unsynced))
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

    // MARK: ID3v2 frames

    private struct Tags {
        var title, album, albumArtist, genre: String?
        var artists: [String] = []
        var track, disc: Int?
        var cover: MediaInfo.CoverImage?
        /// The words of SYLT and USLT frames, as the discoverer's reader finds them.
        var synced: [TagLyrics] = [], unsynced: [TagLyrics] = []
        private var seen: Set<String> = []

        /// Reads the frames of a tag's body; false when one of them is beyond this reader.
        mutating func parse(_ body: [UInt8], major: UInt8) -> Bool {
            var at = 0
            while at + 10 <= body.count, body[at] != 0 {
                let id = String(decoding: body[at..<at + 4], as: UTF8.self)
                let length = major == 4 ? syncsafe(body[at + 4..<at + 8]) : Int(bigEndian(body[at + 4..<at + 8]))
                let format = body[at + 9]
                guard let length, at + 10 + length <= body.count,
                      format & (major == 4 ? 0x4F : 0xE0) == 0 else { return false }  // compressed, encrypted, grouped…
                let content = Array(body[at + 10..<at + 10 + length])
                at += 10 + length
                guard Self.known.contains(id) else {
                    if Self.leftToTheDiscoverer.contains(id) { return false }
                    continue
                }
                guard seen.insert(id).inserted else { return false }  // a frame twice: GStreamer merges them
                if id == "SYLT" || id == "USLT" {
                    if let words = TagLyrics.id3Frame(id: id, content: content) {
                        if id == "SYLT" { synced.append(words) } else { unsynced.append(words) }
                    }
                    continue
                }
                if id == "APIC" {
                    guard let image = Self.picture(content) else { return false }
                    cover = image
                    continue
                }
                guard let values = Self.text(content) else { return false }
                switch id {
                case "TPE1": artists = values
                default:
                    guard values.count <= 1 else { return false }
                    let value = values.first
                    switch id {
                    case "TIT2": title = value
                    case "TALB": album = value
                    case "TPE2": albumArtist = value
                    case "TCON":
                        // Numbers ("17", "(17)Rock") name ID3v1 genres that GStreamer spells out.
                        guard let value, !value.contains("("), Int(value) == nil else { return false }
                        genre = value
                    case "TRCK", "TPOS":
                        guard let value, let number = Self.position(value) else { return false }
                        if id == "TRCK" { track = number } else { disc = number }
                    default: break
                    }
                }
            }
            return true
        }

        private static let known: Set<String> = ["TIT2", "TPE1", "TALB", "TPE2", "TCON", "TRCK", "TPOS", "APIC", "USLT", "SYLT"]
        /// Frames GStreamer turns into what MediaInfo holds: chapters (a table of contents), user texts (some are
        /// mapped to tags).
        private static let leftToTheDiscoverer: Set<String> = ["CHAP", "CTOC", "TXXX"]

        /// "3" or "3/12": the number, when it is one above 0.
        private static func position(_ value: String) -> Int? {
            let parts = value.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count <= 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
                  let number = Int(parts[0]), number > 0, number < 1 << 31 else { return nil }
            return number
        }

        /// The values of a text frame, trimmed, empty ones left out; nil when its text can't be read for certain.
        private static func text(_ content: [UInt8]) -> [String]? {
            guard let encoding = content.first, let whole = decode(Array(content.dropFirst()), encoding) else { return nil }
            return whole.split(separator: "\0", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
                .filter { !$0.isEmpty }
        }

        /// Text in the frame's encoding: ISO-8859-1 only as ASCII or valid UTF-8 (GStreamer guesses at other bytes),
        /// UTF-16 with a byte order mark, UTF-16BE, UTF-8.
        private static func decode(_ bytes: [UInt8], _ encoding: UInt8) -> String? {
            switch encoding {
            case 0, 3:
                return String(validating: bytes, as: UTF8.self)
            case 1, 2:
                guard bytes.count % 2 == 0 else { return nil }
                var units = stride(from: 0, to: bytes.count, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
                if encoding == 1 {
                    // Each value may start with its own mark; without one, GStreamer guesses.
                    guard units.first == 0xFEFF || units.first == 0xFFFE else { return nil }
                    let swap = units.first == 0xFFFE
                    if swap { units = units.map(\.byteSwapped) }
                    units = units.filter { $0 != 0xFEFF }
                    guard !units.contains(0xFFFE) else { return nil }
                }
                return String(validating: units, as: UTF16.self)
            default:
                return nil
            }
        }

        /// A picture frame whose image is a JPEG or PNG (the type GStreamer would find in its bytes).
        private static func picture(_ content: [UInt8]) -> MediaInfo.CoverImage? {
            guard let encoding = content.first, encoding <= 3,
                  let mimeEnd = content.dropFirst().firstIndex(of: 0), mimeEnd + 1 < content.count else { return nil }
            let type = content[mimeEnd + 1]
            guard type != 1, type != 2 else { return nil }  // file icons: GStreamer's preview-image
            // The description, ended by one NUL (two, aligned, in UTF-16).
            var at = mimeEnd + 2
            if encoding == 1 || encoding == 2 {
                while at + 1 < content.count, content[at] != 0 || content[at + 1] != 0 { at += 2 }
                at += 2
            } else {
                while at < content.count, content[at] != 0 { at += 1 }
                at += 1
            }
            guard at < content.count else { return nil }
            let data = content[at...]
            let mimeType: String
            if data.starts(with: [0xFF, 0xD8, 0xFF]) {
                mimeType = "image/jpeg"
            } else if data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
                mimeType = "image/png"
            } else {
                return nil
            }
            return MediaInfo.CoverImage(data: Data(data), mimeType: mimeType)
        }
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
