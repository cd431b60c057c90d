import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What identifies an audio file whatever its path and its tags: the length of its audio (the file less the tags at its
/// start and end) and a hash of three fixed slices of that audio (the first, middle and last 16 KiB; all of it when it
/// is shorter than three slices), as "2:length:hash" ("3:…" for Ogg and WAV files). A renamed, moved or re-tagged file
/// keeps it, and so does one re-tagged and moved at once. Reading 48 KiB and the tags' headers costs about as much as
/// a `stat` of a file in the page cache, so every file an import reads gets one (docs/decisions/file-identity.md).
///
/// Tags set apart from the audio: ID3v2 at the start, ID3v1, APEv2 and Lyrics3v2 at the end (MP3, and any file they
/// were put on), FLAC's metadata blocks, in MP4 everything but the `mdat` atom (the samples), in a WAV file everything
/// but the `data` chunk, and in Ogg Vorbis and Opus the header packets and every page's header (``AudioContainers``).
/// Other formats are hashed whole: their tags are within the slices, and a re-tagged file is found by its path.
///
/// Beside it, the file's size and modification time as `stat` gives them: a file whose pair is unchanged since it
/// was read is not read again.
public struct FileFingerprint: Sendable, Equatable {
    /// Bytes.
    public var size: Int64
    /// The modification time, nanoseconds since 1970.
    public var modified: Int64
    /// "2:length:hash" or "3:length:hash" (``kind(of:)``; the audio's length in bytes, the hash in hexadecimal), or nil when only `stat` was asked for
    /// (``stamp(of:)``).
    public var value: String?

    public init(size: Int64, modified: Int64, value: String?) {
        self.size = size
        self.modified = modified
        self.value = value
    }

    /// The length of each slice of the audio hashed.
    static let slice = 16 * 1024

    /// Size and modification time only (no read): nil when `path` can't be stat'ed or is no regular file.
    public static func stamp(of path: String) -> FileFingerprint? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return FileFingerprint(size: Int64(info.st_size), modified: RegularFile.nanoseconds(info.st_mtim), value: nil)
    }

    /// Whether a stored value is of the kind ``of(_:)`` makes for the file at `path`: a value of another kind (the
    /// whole file's, before tags were set apart: "1…", or "2:…" for an Ogg or WAV file) is no fingerprint for finding
    /// a file, and is made again when an import next looks at the file.
    public static func isCurrent(_ value: String, path: String) -> Bool {
        value.hasPrefix("\(kind(of: path)):") && value.split(separator: ":").count == 3
    }

    /// The kind of value ``of(_:)`` makes, by the file's name: 3 where the audio is found inside the container's own
    /// structure (Ogg pages, WAV chunks), 2 elsewhere.
    static func kind(of path: String) -> Int {
        let name = path.split(separator: "/").last ?? ""
        let suffix = name.split(separator: ".").last.map { $0.lowercased() } ?? ""
        return ["ogg", "oga", "opus", "wav", "wave"].contains(suffix) ? 3 : 2
    }

    /// Size, modification time and the hash of the audio's slices; nil when the file can't be opened or read, or is
    /// not a regular file (a FIFO put in its place is opened without blocking, and left).
    public static func of(_ path: String) -> FileFingerprint? {
        guard let file = try? RegularFile(path: path) else { return nil }
        let oggAudio = AudioContainers.oggAudioStart(file)
        let audio = oggAudio.map { $0..<file.size } ?? AudioContainers.wavData(file) ?? AudioRange.of(file)
        // Whole, or the three slices: the start, the middle and the end.
        var windows = [audio]
        if audio.count > 3 * slice {
            let middle = audio.lowerBound + audio.count / 2 - slice / 2
            windows = [audio.lowerBound..<audio.lowerBound + slice, middle..<middle + slice, audio.upperBound - slice..<audio.upperBound]
        }
        // In an Ogg stream, the payloads of the pages from each window on: the pages' headers (numbers, checksums)
        // change when the comments before them grow.
        let runs = oggAudio == nil ? windows : windows.flatMap { window in
            AudioContainers.oggPayloads(file, in: audio, from: window.lowerBound, count: window.count)
        }
        var hasher = SliceHasher(seed: UInt64(audio.count))
        var buffer = [UInt8](repeating: 0, count: max(1, runs.map(\.count).max() ?? 1))
        for run in runs {
            // Short: the file shrank while read.
            guard file.read(into: &buffer, at: run.lowerBound, upTo: run.count) == run.count else { return nil }
            buffer.withUnsafeBytes { hasher.add(UnsafeRawBufferPointer(rebasing: $0[..<run.count])) }
        }
        return FileFingerprint(size: Int64(file.size), modified: file.modified,
                               value: "\(kind(of: path)):\(audio.count):" + String(hasher.finish(), radix: 16))
    }
}

/// Where a file's audio is: the bytes between the tags at its start and those at its end, read from the tags' headers
/// (a few small reads). The whole file when it has no tags known here, or they don't add up.
enum AudioRange {
    static func of(_ file: borrowing RegularFile) -> Range<Int> {
        let size = file.size
        var start = 0
        // ID3v2 (possibly more than one, as some taggers leave them), then FLAC's metadata blocks.
        for _ in 0..<4 {
            guard let header = file.read(at: start, count: 10), header.starts(with: Array("ID3".utf8)),
                  header[6...9].allSatisfy({ $0 < 0x80 }) else { break }
            let length = header[6...9].reduce(0) { $0 << 7 | Int($1) }
            start += 10 + length + (header[5] & 0x10 != 0 ? 10 : 0)
        }
        if let magic = file.read(at: start, count: 4), magic == Array("fLaC".utf8) {
            start = flacAudio(file, after: start + 4) ?? start
        } else if start == 0, let atoms = mp4Data(file) {
            return atoms
        }
        var end = size
        // ID3v1, Lyrics3v2 and APEv2 at the end, in any order (ID3v1 is written last).
        var changed = true
        while changed && end > start {
            changed = false
            if end - start >= 128, let tag = file.read(at: end - 128, count: 3), tag == Array("TAG".utf8) {
                end -= 128
                changed = true
            }
            if end - start >= 32, let footer = file.read(at: end - 32, count: 32), footer.starts(with: Array("APETAGEX".utf8)) {
                let length = footer[12..<16].reversed().reduce(0) { $0 << 8 | Int($1) }
                let header = footer[23] & 0x80 != 0 ? 32 : 0
                guard length >= 32, end - start >= length + header else { break }
                end -= length + header
                changed = true
            }
            if end - start >= 15, let footer = file.read(at: end - 15, count: 15), footer[6...].elementsEqual("LYRICS200".utf8),
               let length = Int(String(decoding: footer[..<6], as: UTF8.self)), length >= 0, end - start >= length + 15 {
                end -= length + 15
                changed = true
            }
        }
        return start < end && end <= size ? start..<end : 0..<size
    }

    /// The offset of the first audio frame after the metadata blocks starting at `offset`; nil when they run past the
    /// end or don't end.
    private static func flacAudio(_ file: borrowing RegularFile, after offset: Int) -> Int? {
        var offset = offset
        for _ in 0..<1024 {
            guard let header = file.read(at: offset, count: 4) else { return nil }
            offset += 4 + header[1...3].reduce(0) { $0 << 8 | Int($1) }
            guard offset <= file.size else { return nil }
            if header[0] & 0x80 != 0 { return offset }
        }
        return nil
    }

    /// The content of an MP4 file's largest `mdat` atom (its samples: tags are in `moov`, which taggers rewrite and
    /// move); nil when the file is no MP4 (no `ftyp` first) or has no `mdat`.
    private static func mp4Data(_ file: borrowing RegularFile) -> Range<Int>? {
        guard let first = file.read(at: 4, count: 4), first == Array("ftyp".utf8) else { return nil }
        var offset = 0
        var data: Range<Int>?
        for _ in 0..<256 {
            guard offset + 8 <= file.size else { break }
            guard let header = file.read(at: offset, count: 8) else { return nil }
            var length = header[0..<4].reduce(0) { $0 << 8 | Int($1) }
            var headerLength = 8
            if length == 1 {
                guard let large = file.read(at: offset + 8, count: 8) else { return nil }
                length = large.reduce(0) { $0 << 8 | Int($1) }
                headerLength = 16
            } else if length == 0 {
                length = file.size - offset
            }
            guard length >= headerLength, length <= file.size - offset else { return data }
            if header[4..<8].elementsEqual("mdat".utf8), length - headerLength > data?.count ?? 0 {
                data = offset + headerLength..<offset + length
            }
            offset += length
        }
        return data
    }
}

/// A 64-bit hash of byte runs, eight bytes a step (xxHash64's round and final mix, one lane): 0.5 GB/s and more
/// in a release build, and well spread. Not for security: it tells files apart, nobody forges them here.
struct SliceHasher {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private var state: UInt64
    private var length: UInt64 = 0

    init(seed: UInt64) { state = seed &+ Self.prime3 }

    mutating func add(_ bytes: UnsafeRawBufferPointer) {
        var index = 0
        while index + 8 <= bytes.count {
            round(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            index += 8
        }
        if index < bytes.count {
            var tail: UInt64 = 0
            for (shift, byte) in bytes[index...].enumerated() { tail |= UInt64(byte) << (8 * UInt64(shift)) }
            round(tail)
        }
        length &+= UInt64(bytes.count)
    }

    private mutating func round(_ word: UInt64) {
        state = (state ^ ((word &* Self.prime2).rotated(31) &* Self.prime1)).rotated(27) &* Self.prime1 &+ Self.prime3
    }

    func finish() -> UInt64 {
        var hash = state ^ length
        hash ^= hash >> 33
        hash = hash &* Self.prime2
        hash ^= hash >> 29
        hash = hash &* Self.prime3
        return hash ^ (hash >> 32)
    }
}

private extension UInt64 {
    func rotated(_ bits: UInt64) -> UInt64 { (self << bits) | (self >> (64 - bits)) }
}
