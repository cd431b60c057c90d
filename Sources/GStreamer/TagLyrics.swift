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
    public static func id3Frame(_ bytes: [UInt8]) -> TagLyrics? {
        ID3Frame(bytes).flatMap(id3Frame)
    }

    static func id3Frame(_ frame: ID3Frame) -> TagLyrics? {
        guard frame.id == "USLT" || frame.id == "SYLT" else { return nil }
        guard !frame.hasFormatFlags else { return .unreadable("a \(frame.id) frame with format flags (compressed, encrypted or other)") }
        return id3Frame(id: frame.id, content: frame.content)
    }

    // MARK: USLT and SYLT

    /// `USLT`: encoding, language (3), a description ended by a NUL, the text.
    private static func unsynced(_ content: [UInt8]) -> TagLyrics? {
        guard let encoding = content.first, content.count >= 4 else { return .unreadable("a USLT frame too short") }
        var at = 4
        do {
            _ = try ID3Frame.string(content, at: &at, encoding)  // the description
            let text = try ID3Frame.string(content, at: &at, encoding).trimmingCharacters(in: .whitespacesAndNewlines)
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
            _ = try ID3Frame.string(content, at: &at, encoding)
            var pieces: [(text: String, start: Int)] = []
            while at < content.count {
                let text = try ID3Frame.string(content, at: &at, encoding)
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
}
