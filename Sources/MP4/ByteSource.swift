import Foundation

/// Random access to the bytes of a file or a buffer. A read returns exactly what was asked for or throws: it
/// never goes past `size`, so loops driven by values from the file cannot run off the end.
protocol ByteSource {
    /// The number of bytes, fixed when the source was opened.
    var size: UInt64 { get }
    /// The `count` bytes at `offset`.
    /// - Throws: ``MP4Error/malformed(_:)`` when they are not all there, ``MP4Error/unreadable(_:)`` on I/O errors.
    func read(at offset: UInt64, count: Int) throws(MP4Error) -> [UInt8]
}

extension ByteSource {
    /// Checks that `count` bytes at `offset` lie inside the source.
    func checkRange(_ offset: UInt64, _ count: Int, name: String) throws(MP4Error) {
        guard count >= 0, offset <= size, UInt64(count) <= size - offset else {
            throw .malformed("\(name): truncated (\(count) bytes wanted at offset \(offset), the file has \(size))")
        }
    }
}

/// A file read with seek + read through one FileHandle; nothing is loaded beyond what is asked for.
/// Not Sendable: it lives within one call of ``MP4ChapterReader``.
final class FileSource: ByteSource {
    private let handle: FileHandle
    private let name: String
    let size: UInt64

    /// Opens `url` for reading.
    /// - Throws: ``MP4Error/notFound(_:)``, ``MP4Error/unreadable(_:)`` (also for a directory).
    init(_ url: URL) throws(MP4Error) {
        let path = url.path(percentEncoded: false)
        name = path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw .notFound("No such file: \(path)")
        }
        guard !isDirectory.boolValue else {
            throw .unreadable("\(path) is a directory, not an MP4 file")
        }
        do {
            handle = try FileHandle(forReadingFrom: url)
        } catch {
            throw .unreadable("Cannot open \(path): \(error.localizedDescription)")
        }
        do {
            size = try handle.seekToEnd()
        } catch {
            try? handle.close()
            throw .unreadable("Cannot read \(path): \(error.localizedDescription)")
        }
    }

    deinit {
        try? handle.close()
    }

    func read(at offset: UInt64, count: Int) throws(MP4Error) -> [UInt8] {
        try checkRange(offset, count, name: name)
        guard count > 0 else { return [] }
        let data: Data?
        do {
            try handle.seek(toOffset: offset)
            data = try handle.read(upToCount: count)
        } catch {
            throw .unreadable("Cannot read \(name) at offset \(offset): \(error.localizedDescription)")
        }
        guard let data, data.count == count else {
            // The file shrank while we read it.
            throw .malformed("\(name): truncated (\(count) bytes wanted at offset \(offset))")
        }
        return [UInt8](data)
    }
}

/// Bytes already in memory (tests, or a caller that has the file's head).
struct DataSource: ByteSource {
    let data: Data
    var size: UInt64 { UInt64(data.count) }

    func read(at offset: UInt64, count: Int) throws(MP4Error) -> [UInt8] {
        try checkRange(offset, count, name: "data")
        let start = data.startIndex + Int(offset)
        return [UInt8](data[start..<start + count])
    }
}

/// A cursor over bytes read from a source; every accessor throws ``MP4Error/malformed(_:)`` instead of
/// reading past the end.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var position = 0
    let what: String

    init(_ bytes: [UInt8], what: String) {
        self.bytes = bytes
        self.what = what
    }

    var remaining: Int { bytes.count - position }

    mutating func skip(_ count: Int) throws(MP4Error) {
        try need(count)
        position += count
    }

    mutating func u8() throws(MP4Error) -> UInt8 {
        try need(1)
        defer { position += 1 }
        return bytes[position]
    }

    mutating func u16() throws(MP4Error) -> UInt16 {
        UInt16(try uint(2))
    }

    mutating func u32() throws(MP4Error) -> UInt32 {
        UInt32(try uint(4))
    }

    mutating func u64() throws(MP4Error) -> UInt64 {
        try uint(8)
    }

    mutating func bytes(_ count: Int) throws(MP4Error) -> ArraySlice<UInt8> {
        try need(count)
        defer { position += count }
        return bytes[position..<position + count]
    }

    private mutating func uint(_ width: Int) throws(MP4Error) -> UInt64 {
        try need(width)
        var value: UInt64 = 0
        for byte in bytes[position..<position + width] {
            value = value << 8 | UInt64(byte)
        }
        position += width
        return value
    }

    private func need(_ count: Int) throws(MP4Error) {
        guard count >= 0, count <= remaining else {
            throw .malformed("\(what): \(count) bytes wanted, \(remaining) left")
        }
    }
}
