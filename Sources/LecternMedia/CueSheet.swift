import Foundation

/// A CUE sheet: the tracks of one or more audio files, each starting at its `INDEX 01`. Pure: the caller reads the
/// bytes (``CueSheetFile`` finds the sheet beside a file).
///
/// ```swift
/// let sheet = try CueSheet(bytes: Array("""
///     PERFORMER "Ann Reader"
///     FILE "book.wav" WAVE
///       TRACK 01 AUDIO
///         TITLE "Prologue"
///         INDEX 01 00:00:00
///       TRACK 02 AUDIO
///         TITLE "One"
///         INDEX 01 12:34:56
///     """.utf8))
/// sheet.chapters(endingAt: .seconds(3600)).map(\.title)  // ["Prologue", "One"]
/// ```
public struct CueSheet: Sendable, Equatable {
    public struct Track: Sendable, Equatable {
        /// As `TRACK nn` says.
        public var number: Int
        public var title: String?
        public var performer: String?
        /// Its `INDEX 01`: where it starts in its file (`INDEX 00`, the pre-gap, is heard at the end of the track
        /// before).
        public var start: Duration
    }

    /// A `FILE` line and the tracks after it, which start in time order.
    public struct File: Sendable, Equatable {
        /// As written: a name, maybe with a path (`C:\rips\book.wav`).
        public var name: String
        public var tracks: [Track]
    }

    /// The disc's `TITLE` and `PERFORMER` (before the first `TRACK`).
    public var title: String?
    public var performer: String?
    /// In the sheet's order; at least one track in all.
    public var files: [File]

    /// The most bytes a sheet may have: a book of a thousand chapters takes about 100 kB.
    public static let maximumSize = 256 << 10
    /// The most bytes a line may have.
    public static let maximumLineLength = 4096
    /// Frames (the unit of `INDEX` times after minutes and seconds) in a second.
    public static let framesPerSecond = 75

    /// Parses a sheet's bytes: UTF-8, else Latin-1, with or without a byte-order mark.
    ///
    /// - Throws: ``CueSheetError``: over ``maximumSize``, not text, or malformed (see ``init(text:)``).
    public init(bytes: some Collection<UInt8>) throws(CueSheetError) {
        try self.init(text: Self.text(of: bytes))
    }

    /// Parses a sheet's text, line ends LF or CRLF. Keywords in any case; values quoted or not; `REM` and the
    /// lines Lectern has no use for (`CATALOG`, `FLAGS`, `ISRC`, `PREGAP`, …) are passed over, and so are
    /// `INDEX 00` and `INDEX 02` and above.
    ///
    /// - Throws: ``CueSheetError/malformed(line:_:)``: a line over ``maximumLineLength``, a `TRACK` before any
    ///   `FILE`, an `INDEX` outside a track or not `mm:ss:ff` (seconds below 60, frames below 75), a track without
    ///   `INDEX 01` or with two, a track starting no later than the one before it in its file, no track at all.
    public init(text: String) throws(CueSheetError) {
        var title: String?
        var performer: String?
        var files: [File] = []
        var track: (number: Int, title: String?, performer: String?, start: Duration?, line: Int)?

        func endTrack() throws(CueSheetError) {
            guard let current = track else { return }
            track = nil
            guard let start = current.start else { throw .malformed(line: current.line, "track \(current.number) has no INDEX 01") }
            if let before = files[files.count - 1].tracks.last, start <= before.start {
                throw .malformed(line: current.line, "track \(current.number) starts no later than track \(before.number)")
            }
            files[files.count - 1].tracks.append(Track(number: current.number, title: current.title,
                                                       performer: current.performer, start: start))
        }

        for (number, line) in try Self.commands(in: text) {
            switch line.keyword {
            case "FILE":
                try endTrack()
                files.append(File(name: Self.fileName(line.rest), tracks: []))
            case "TRACK":
                try endTrack()
                guard !files.isEmpty else { throw .malformed(line: number, "a TRACK before any FILE") }
                guard let trackNumber = line.rest.split(separator: " ").first.flatMap({ Self.number($0, digits: 4) }) else {
                    throw .malformed(line: number, "not a track number: \(line.rest)")
                }
                track = (trackNumber, nil, nil, nil, number)
            case "INDEX":
                let words = line.rest.split(separator: " ", omittingEmptySubsequences: true)
                guard track != nil, words.count == 2, let index = Self.number(words[0], digits: 2),
                      let start = Self.time(words[1]) else {
                    throw .malformed(line: number, track == nil ? "an INDEX outside a track" : "not an INDEX: \(line.rest)")
                }
                guard index == 1 else { continue }
                guard track?.start == nil else { throw .malformed(line: number, "a second INDEX 01") }
                track?.start = start
            case "TITLE":
                if track != nil { track?.title = Self.value(line.rest) } else { title = Self.value(line.rest) }
            case "PERFORMER":
                if track != nil { track?.performer = Self.value(line.rest) } else { performer = Self.value(line.rest) }
            default:
                continue
            }
        }
        try endTrack()
        guard files.contains(where: { !$0.tracks.isEmpty }) else { throw .malformed(line: 0, "no TRACK") }
        self.title = title
        self.performer = performer
        self.files = files
    }

    /// The names its `FILE` lines give, in order, read from any text (the rest of it may be malformed): which
    /// files a sheet speaks of.
    public static func fileNames(in text: String) -> [String] {
        guard let commands = try? commands(in: text) else { return [] }
        return commands.filter { $0.command.keyword == "FILE" }.map { fileName($0.command.rest) }
    }

    /// The tracks of a sheet of one `FILE` as that file's chapters: each ends where the next starts, the last at
    /// `duration`. A chapter's title is its track's `TITLE`, else "Track N"; with " — " and the track's
    /// `PERFORMER` after it when that is not the disc's.
    public func chapters(endingAt duration: Duration?) -> [(title: String, start: Duration, end: Duration?)] {
        let tracks = files.flatMap(\.tracks)
        return tracks.indices.map { index in
            let track = tracks[index]
            var title = track.title.flatMap { $0.isEmpty ? nil : $0 } ?? "Track \(track.number)"
            if let reader = track.performer, !reader.isEmpty, reader != performer { title += " — " + reader }
            return (title, track.start, index + 1 < tracks.count ? tracks[index + 1].start : duration)
        }
    }

    // MARK: - Reading

    /// The text of a sheet's bytes: UTF-8, else Latin-1; a byte-order mark is left out.
    ///
    /// - Throws: ``CueSheetError/tooLarge(_:)`` over ``maximumSize``; ``CueSheetError/notText(line:)`` for a
    ///   control character other than a tab or a line end.
    public static func text(of bytes: some Collection<UInt8>) throws(CueSheetError) -> String {
        guard bytes.count <= maximumSize else { throw .tooLarge(bytes.count) }
        var line = 1
        for byte in bytes {
            if byte == 0x0A {
                line += 1
            } else if byte < 0x20 && byte != 0x09 && byte != 0x0D || byte == 0x7F {
                throw .notText(line: line)
            }
        }
        let body = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? bytes.dropFirst(3) : bytes.dropFirst(0)
        return String(validating: body, as: UTF8.self)
            ?? String(String.UnicodeScalarView(body.map { Unicode.Scalar($0) }))
    }

    /// A line of a sheet: its first word, upper-cased, and the rest, tabs made spaces, trimmed.
    private struct Command {
        var keyword: String
        var rest: Substring
    }

    /// The lines that are not empty, numbered from 1.
    private static func commands(in text: String) throws(CueSheetError) -> [(number: Int, command: Command)] {
        var commands: [(Int, Command)] = []
        for (index, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            guard line.utf8.count <= maximumLineLength else {
                throw .malformed(line: index + 1, "a line of \(line.utf8.count) bytes, more than \(maximumLineLength)")
            }
            let words = line.replacingOccurrences(of: "\t", with: " ").trimmingCharacters(in: .whitespaces)
            guard !words.isEmpty else { continue }
            let keyword = words.prefix { $0 != " " }
            let rest = words[keyword.endIndex...].drop { $0 == " " }
            commands.append((index + 1, Command(keyword: keyword.uppercased(), rest: rest)))
        }
        return commands
    }

    /// A quoted value (from the first quote to the last: a title may hold quotes), else the words as written.
    private static func value(_ rest: Substring) -> String {
        guard rest.first == "\"" else { return String(rest) }
        let inside = rest.dropFirst()
        return String(inside[..<(inside.lastIndex(of: "\"") ?? inside.endIndex)])
    }

    /// The file a `FILE` line names: its value without the file type after it (`"book.wav" WAVE`, `book.wav WAVE`).
    private static func fileName(_ rest: Substring) -> String {
        if rest.first == "\"" { return value(rest) }
        guard let space = rest.lastIndex(of: " ") else { return String(rest) }
        return String(rest[..<space]).trimmingCharacters(in: .whitespaces)
    }

    /// A number of at most `digits` ASCII digits.
    private static func number(_ text: Substring, digits: Int) -> Int? {
        guard !text.isEmpty, text.count <= digits, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }

    /// `mm:ss:ff`: minutes (any number of them up to six digits), seconds below 60, frames below 75.
    private static func time(_ text: Substring) -> Duration? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let minutes = number(parts[0], digits: 6), let seconds = number(parts[1], digits: 2),
              let frames = number(parts[2], digits: 2), seconds < 60, frames < framesPerSecond else { return nil }
        return .seconds(minutes * 60 + seconds) + .seconds(frames) / framesPerSecond
    }
}

/// Why a CUE sheet could not be read; the caller logs it and leaves the sheet out.
public enum CueSheetError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooLarge(Int)
    /// A control character on that line: not a text file.
    case notText(line: Int)
    /// Line 0: the sheet as a whole.
    case malformed(line: Int, String)
    /// Not a regular file (a FIFO, a device, a folder), or it could not be read.
    case unreadable(String)

    public var description: String {
        switch self {
        case .tooLarge(let size): "\(size) bytes, more than the \(CueSheet.maximumSize) a cue sheet may have"
        case .notText(let line): "line \(line): a control character: not text"
        case .malformed(0, let what): what
        case .malformed(let line, let what): "line \(line): \(what)"
        case .unreadable(let why): why
        }
    }
}
