import Foundation
import GStreamer
import LecternCore
import Logging

/// A media file's words: the LRC file beside it (the same name, `.lrc`: `Chapter 1.mp3` → `Chapter 1.lrc`), else
/// the lyrics in its tags (``TagLyrics``, stored in the library for a book's files). Read when the file is opened,
/// never while it plays. What cannot be used (not a regular file, over ``Lyrics/maximumSize``, not UTF-8,
/// malformed) is logged as a warning and gives no text.
public enum LyricsFile {
    /// The words in the tags of the file at `path`; nil when they have none, or (logged) they cannot be used.
    public static func lyrics(in tags: TagLyrics?, of path: String, logger: Logger) -> Lyrics? {
        let problem: String
        switch tags {
        case nil:
            return nil
        case .text(let text):
            do throws(LyricsError) {
                return try Lyrics(lrc: text.utf8)
            } catch {
                problem = error.description
            }
        case .unreadable(let why):
            problem = why
        }
        logger.warning("cannot read the lyrics in a file's tags: no text", metadata: ["file": "\(path)", "error": "\(problem)"])
        return nil
    }

    /// The text of the words in the tags when they can be used (else logged): what the library keeps of them.
    public static func usableText(in tags: TagLyrics?, of path: String, logger: Logger) -> String? {
        guard lyrics(in: tags, of: path, logger: logger) != nil, case .text(let text)? = tags else { return nil }
        return text
    }

    /// The lyrics beside `url`; nil when there is no LRC file, or (logged) it cannot be used.
    public static func lyrics(beside url: URL, logger: Logger) -> Lyrics? {
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
    public static func load(_ url: URL) throws(LyricsError) -> Lyrics? {
        let bytes: [UInt8]?
        do throws(SideFile.Problem) {
            bytes = try SideFile.bytes(at: url.path, limit: Lyrics.maximumSize)
        } catch {
            switch error {
            case .tooLarge(let size): throw .tooLarge(size)
            case .unreadable(let why): throw .unreadable(why)
            }
        }
        guard let bytes else { return nil }
        return try Lyrics(lrc: bytes)
    }
}
