import Foundation
import LecternCore
import LecternLibrary
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
        let file: RegularFile
        do { file = try RegularFile(path: url.path) } catch { throw .unreadable("\(error)") }
        // One byte more than the stat said: a file grown since is read to there, and found too large or cut.
        guard let bytes = file.readStart(limit: min(file.size, Lyrics.maximumSize) + 1) else { throw .unreadable(String(cString: strerror(errno))) }
        return try Lyrics(lrc: bytes[...])
    }
}
