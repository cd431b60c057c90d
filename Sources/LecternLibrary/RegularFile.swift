import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A regular file opened for reading, never waiting: a FIFO or a device found where a file was expected (or put
/// there since it was listed) is opened without blocking (`O_NONBLOCK`) and refused. Closed when it goes. What reads
/// a file an import or an open came across (its fingerprint, its tags, the lyrics beside it) opens it through this.
public struct RegularFile: ~Copyable {
    public enum OpenError: Error, CustomStringConvertible {
        /// `open` failed, with its reason (`strerror`).
        case cannotOpen(String)
        case notRegular

        public var description: String {
            switch self {
            case .cannotOpen(let reason): reason
            case .notRegular: "not a regular file"
            }
        }
    }

    /// Bytes, when it was opened.
    public let size: Int
    /// The modification time, nanoseconds since 1970.
    public let modified: Int64
    private let descriptor: Int32

    public init(path: String) throws(OpenError) {
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw .cannotOpen(String(cString: strerror(errno))) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw .notRegular
        }
        self.descriptor = descriptor
        size = Int(info.st_size)
        modified = Self.nanoseconds(info.st_mtim)
    }

    deinit { close(descriptor) }

    /// A `stat` time as nanoseconds since 1970.
    static func nanoseconds(_ time: timespec) -> Int64 {
        Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec)
    }

    /// The `count` bytes at `offset`; nil when the file ends before them (it shrank) or a read fails.
    public func read(at offset: Int, count: Int) -> [UInt8]? {
        guard offset >= 0, count >= 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        return read(into: &bytes, at: offset, upTo: count) == count ? bytes : nil
    }

    /// At most `limit` bytes from the start: fewer when the file is shorter. nil when a read fails.
    public func readStart(limit: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: max(0, limit))
        guard let count = read(into: &bytes, at: 0, upTo: bytes.count) else { return nil }
        return Array(bytes[..<count])
    }

    /// Reads into `bytes` from `offset` until `count` bytes or the end of the file; how many, or nil on an error.
    func read(into bytes: inout [UInt8], at offset: Int, upTo count: Int) -> Int? {
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { return nil }
            if got == 0 { break }
            done += got
        }
        return done
    }
}
