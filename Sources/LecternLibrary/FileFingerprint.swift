import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// What identifies an audio file whatever its path: its size and a hash of three fixed slices of it (the first,
/// middle and last 16 KiB; the whole file when it is smaller than three slices), as "size:hash". A renamed or moved
/// file keeps it; a re-tagged one does not (tags sit at a file's start or end), and is found by its path instead.
/// Reading 48 KiB costs about as much as a `stat` of a file in the page cache, so every file an import reads gets
/// one (docs/decisions/file-identity.md).
///
/// Beside it, the file's size and modification time as `stat` gives them: a file whose pair is unchanged since it
/// was read is not read again.
public struct FileFingerprint: Sendable, Equatable {
    /// Bytes.
    public var size: Int64
    /// The modification time, nanoseconds since 1970.
    public var modified: Int64
    /// "size:hash" (hexadecimal), or nil when only `stat` was asked for (``stamp(of:)``).
    public var value: String?

    public init(size: Int64, modified: Int64, value: String?) {
        self.size = size
        self.modified = modified
        self.value = value
    }

    /// The length of each slice hashed.
    static let slice = 16 * 1024

    /// Size and modification time only (no read): nil when `path` can't be stat'ed or is no regular file.
    public static func stamp(of path: String) -> FileFingerprint? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return FileFingerprint(size: Int64(info.st_size), modified: RegularFile.nanoseconds(info.st_mtim), value: nil)
    }

    /// Size, modification time and the hash of the slices; nil when the file can't be opened or read, or is not a
    /// regular file (a FIFO put in its place is opened without blocking, and left).
    public static func of(_ path: String) -> FileFingerprint? {
        guard let file = try? RegularFile(path: path) else { return nil }
        let size = file.size
        // Whole, or the three slices: the start, the middle and the end.
        var ranges: [(offset: Int, count: Int)] = [(0, size)]
        if size > 3 * slice {
            ranges = [(0, slice), (size / 2 - slice / 2, slice), (size - slice, slice)]
        }
        var hasher = SliceHasher(seed: UInt64(size))
        var buffer = [UInt8](repeating: 0, count: max(1, ranges.map(\.count).max() ?? 1))
        for range in ranges {
            // Short: the file shrank while read.
            guard file.read(into: &buffer, at: range.offset, upTo: range.count) == range.count else { return nil }
            buffer.withUnsafeBytes { hasher.add(UnsafeRawBufferPointer(rebasing: $0[..<range.count])) }
        }
        return FileFingerprint(size: Int64(size), modified: file.modified, value: "\(size):" + String(hasher.finish(), radix: 16))
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
