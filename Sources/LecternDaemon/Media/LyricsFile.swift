import Foundation
import LecternCore
import Logging

/// The LRC file beside a media file (the same name, `.lrc`: `Chapter 1.mp3` → `Chapter 1.lrc`), read when the
/// file is opened, never while it plays. What cannot be used (not a regular file, over ``Lyrics/maximumSize``, not
/// UTF-8, malformed) is logged as a warning and gives no text.
enum LyricsFile {
    /// The lyrics beside `url`; nil when there is no LRC file, or (logged) it cannot be used.
    static func lyrics(beside url: URL, logger: Logger) -> Lyrics? {
        let lrc = url.deletingPathExtension().appendingPathExtension("lrc")
        do {
            return try load(lrc)
        } catch {
            logger.warning("cannot read the lyrics beside a file: no text", metadata: ["file": "\(lrc.path)", "error": "\(error)"])
            return nil
        }
    }

    /// `url`'s lyrics; nil when there is no such file. Checked before it is read: a regular file (a FIFO would
    /// block the read, a device never end) and at most ``Lyrics/maximumSize`` bytes; then no more is read than that.
    static func load(_ url: URL) throws(LyricsError) -> Lyrics? {
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw .unreadable(String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .unreadable("not a regular file") }
        guard info.st_size <= Lyrics.maximumSize else { throw .tooLarge(Int(info.st_size)) }
        // O_NONBLOCK: a FIFO put in its place since the stat opens without waiting for a writer; fstat refuses it.
        let fd = open(url.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(String(cString: strerror(errno))) }
        defer { close(fd) }
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw .unreadable("not a regular file") }
        // One byte more than the stat said: a file grown since is read to there, and found too large or cut.
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size) + 1)
        var count = 0
        while count < bytes.count {
            let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw .unreadable(String(cString: strerror(errno))) }
            if got == 0 { break }
            count += got
        }
        return try Lyrics(lrc: bytes[..<count])
    }
}
