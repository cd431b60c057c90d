import Foundation
import LecternLibrary

/// A small file beside a media file (an LRC file, a CUE sheet), read whole.
enum SideFile {
    enum Problem: Error {
        case tooLarge(Int)
        /// Not a regular file (a FIFO, a device, a folder), or it could not be read.
        case unreadable(String)
    }

    /// The bytes of the file at `path`; nil when there is no such file. Checked before it is read: a regular file
    /// (a FIFO would block the read, a device never end) and at most `limit` bytes; then no more is read than that.
    static func bytes(at path: String, limit: Int) throws(Problem) -> [UInt8]? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw .unreadable(String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .unreadable("not a regular file") }
        guard info.st_size <= limit else { throw .tooLarge(Int(info.st_size)) }
        let file: RegularFile
        do { file = try RegularFile(path: path) } catch { throw .unreadable("\(error)") }
        // One byte more than the stat said: a file grown since is read to there, and found too large or cut.
        guard let bytes = file.readStart(limit: min(file.size, limit) + 1) else { throw .unreadable(String(cString: strerror(errno))) }
        guard bytes.count <= limit else { throw .tooLarge(bytes.count) }
        return bytes
    }
}
