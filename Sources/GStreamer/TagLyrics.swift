import Foundation

/// The words a media file's tags carry: unsynced lyrics (ID3 `USLT`, the Vorbis comments `LYRICS` and
/// `UNSYNCEDLYRICS`, MP4 `©lyr`: GStreamer's "lyrics") as written (often LRC itself), or synced ones (ID3 `SYLT`) as
/// LRC text, a `[mm:ss.xxx]` before each line. What cannot be read is said, for the daemon to log.
///
/// ```swift
/// TagLyrics.id3Frame(sylt)   // .text("[00:00.500]First\n[00:01.200]Second")
/// ```
public enum TagLyrics: Sendable, Equatable {
    case text(String)
    /// A lyrics tag was there but cannot be used (the reason, for the log).
    case unreadable(String)

    /// Of the words a file's tags give, best first, the first that can be read; else why the first cannot.
    public static func first(_ candidates: [TagLyrics]) -> TagLyrics? {
        candidates.first { if case .text = $0 { true } else { false } } ?? candidates.first
    }

    /// An ID3v2.3 or 2.4 `USLT` or `SYLT` frame's content (after its 10-byte header and any data length indicator);
    /// nil for another frame, or one without words.
    public static func id3Frame(id: String, content: [UInt8]) -> TagLyrics? {
        switch id {
        case "USLT": unsynced(content)
        case "SYLT": synced(content)
        default: nil
        }
    }

    /// A frame as GStreamer hands on those it does not map (the "private-id3v2-frame" tag: the frame with its 10-byte
    /// header, as in the file, and no version); nil when it is not lyrics. A frame with format flags (compressed,
    /// encrypted, grouped, unsynchronised: their bits differ between ID3v2.3 and 2.4) is not read.
    public static func id3Frame(_ frame: [UInt8]) -> TagLyrics? {
        guard frame.count >= 10 else { return nil }
        let id = String(decoding: frame[0..<4], as: UTF8.self)
        guard id == "USLT" || id == "SYLT" else { return nil }
        guard frame[9] == 0 else { return .unreadable("a \(id) frame with format flags (compressed, encrypted or other)") }
        return id3Frame(id: id, content: Array(frame[10...]))
    }

    // MARK: USLT and SYLT

    /// `USLT`: encoding, language (3), a description ended by a NUL, the text.
    private static func unsynced(_ content: [UInt8]) -> TagLyrics? {
        guard let encoding = content.first, content.count >= 4 else { return .unreadable("a USLT frame too short") }
        var at = 4
        do {
            _ = try string(content, at: &at, encoding)  // the description
            let text = try string(content, at: &at, encoding).trimmingCharacters(in: .whitespacesAndNewlines)
            return text.isEmpty ? nil : .text(text)
        } catch {
            return .unreadable("a USLT frame: \(error.reason)")
        }
    }

    /// `SYLT`: encoding, language (3), the time format (2: milliseconds; 1: MPEG frames), the content type, a
    /// description ended by a NUL, then each piece of text ended by a NUL and followed by its time (4 bytes, big
    /// endian). A piece that starts a new line starts with a line feed; when no piece does, each piece is a line.
    private static func synced(_ content: [UInt8]) -> TagLyrics? {
        guard let encoding = content.first, content.count >= 6 else { return .unreadable("a SYLT frame too short") }
        guard content[4] == 2 else { return .unreadable("a SYLT frame timed in MPEG frames, not milliseconds") }
        var at = 6
        do {
            _ = try string(content, at: &at, encoding)
            var pieces: [(text: String, start: Int)] = []
            while at < content.count {
                let text = try string(content, at: &at, encoding)
                guard at + 4 <= content.count else { return .unreadable("a SYLT frame cut short") }
                let start = content[at..<at + 4].reduce(0) { $0 << 8 | Int($1) }
                at += 4
                pieces.append((text, start))
            }
            let byLine = pieces.dropFirst().contains { $0.text.hasPrefix("\n") || $0.text.hasPrefix("\r") }
            var lines: [(text: String, start: Int)] = []
            for piece in pieces {
                if byLine, !lines.isEmpty, !(piece.text.hasPrefix("\n") || piece.text.hasPrefix("\r")) {
                    lines[lines.count - 1].text += piece.text
                } else {
                    lines.append(piece)
                }
            }
            let lrc = lines.map { line in
                let text = line.text.split(whereSeparator: \.isNewline).joined(separator: " ")
                    .trimmingCharacters(in: .whitespaces)
                return "[\(lrcTime(line.start))]\(text)"
            }
            return lrc.isEmpty ? nil : .text(lrc.joined(separator: "\n"))
        } catch {
            return .unreadable("a SYLT frame: \(error.reason)")
        }
    }

    /// `mm:ss.xxx`, as ``LecternCore/Lyrics`` reads it.
    private static func lrcTime(_ milliseconds: Int) -> String {
        let minutes = milliseconds / 60_000, seconds = milliseconds / 1000 % 60, rest = milliseconds % 1000
        return String(format: "%02d:%02d.%03d", minutes, seconds, rest)
    }

    private struct Malformed: Error { var reason: String }

    /// The text at `at` in `encoding`, up to its NUL (two aligned in UTF-16) or the end; `at` moves past the NUL.
    /// ISO-8859-1 is read as such; UTF-16 with a byte order mark (each string its own), UTF-16BE, UTF-8.
    private static func string(_ bytes: [UInt8], at: inout Int, _ encoding: UInt8) throws(Malformed) -> String {
        let wide = encoding == 1 || encoding == 2
        var end = at
        if wide {
            while end + 1 < bytes.count, bytes[end] != 0 || bytes[end + 1] != 0 { end += 2 }
        } else {
            while end < bytes.count, bytes[end] != 0 { end += 1 }
        }
        let run = Array(bytes[at..<min(end, bytes.count)])
        at = min(bytes.count, end + (wide ? 2 : 1))
        switch encoding {
        case 0:
            return String(decoding: run.map { UInt16($0) }, as: UTF16.self)
        case 3:
            guard let text = String(validating: run, as: UTF8.self) else { throw Malformed(reason: "not UTF-8") }
            return text
        case 1, 2:
            guard run.count % 2 == 0 else { throw Malformed(reason: "UTF-16 of an odd length") }
            var units = stride(from: 0, to: run.count, by: 2).map { UInt16(run[$0]) << 8 | UInt16(run[$0 + 1]) }
            if encoding == 1, let mark = units.first, mark == 0xFEFF || mark == 0xFFFE {
                if mark == 0xFFFE { units = units.map(\.byteSwapped) }
                units.removeFirst()
            }
            guard let text = String(validating: units, as: UTF16.self) else { throw Malformed(reason: "not UTF-16") }
            return text
        default:
            throw Malformed(reason: "an unknown text encoding (\(encoding))")
        }
    }
}
